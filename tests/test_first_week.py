"""The first-week friction of issue 26 (F2, F4, F6, F7): what a new user
trips over in the first hour is either accepted as meant or refused with the
field, the rule and the fix."""

from __future__ import annotations

import pytest

import memory_core
from memory_core import InMemoryVectorStore, Memory, MemoryConfig, ValidationError

pytestmark = pytest.mark.anyio

HAS_SQLITE = memory_core.registry.known_schemes().get("sqlite") is not None


@pytest.fixture
def anyio_backend() -> str:
    """Async tests run on asyncio."""
    return "asyncio"


# ---------------------------------------------------------------- F6: config as a mapping


async def test_a_config_mapping_is_checked_into_a_memory_config() -> None:
    """Before: ``config={...}`` was refused ("must be a MemoryConfig")."""
    memory = Memory(
        memory_core.reference.InMemoryStorage(),
        InMemoryVectorStore(),
        config={"lastMessages": 3, "semantic_recall": {"top_k": 2}},
    )
    assert memory.config == MemoryConfig(last_messages=3, semantic_recall={"top_k": 2})  # type: ignore[arg-type]
    opened = await Memory.open("memory://", config={"last_messages": 7})
    async with opened:
        assert opened.config.last_messages == 7


async def test_a_misspelt_config_key_names_the_field_meant() -> None:
    storage = memory_core.reference.InMemoryStorage()
    with pytest.raises(ValidationError) as caught:
        Memory(storage, config={"last_mesages": 3})
    assert caught.value.field == "config.last_mesages"
    assert "did you mean 'last_messages'?" in caught.value.reason, caught.value
    with pytest.raises(ValidationError) as caught:
        Memory(storage, config={"semantic_recall": {"topk": 3}}, vector=InMemoryVectorStore())
    assert caught.value.field == "config.semantic_recall.topk" and "'top_k'" in caught.value.reason, caught.value
    with pytest.raises(ValidationError, match=r"config\.lastMessage: .*did you mean 'last_messages'"):
        await Memory.open("memory://", config={"lastMessage": 3})
    with pytest.raises(ValidationError, match=r"^config: expected MemoryConfig or a mapping, got int"):
        Memory(storage, config=3)  # type: ignore[arg-type]
