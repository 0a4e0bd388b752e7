"""Every seam's constructor checks its ``memory`` as ``Memory(...)`` checks
its stores (one checker, :func:`memory_core.arguments.check_memory`): a URL,
a storage or None is a ValidationError naming ``memory`` and the fix, before
any I/O."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from memory_core import InMemoryStorage, Memory, ValidationError


def _seams() -> dict[str, Callable[[Any], object]]:
    """Each seam's constructor, given only the memory argument."""
    found: dict[str, Callable[[Any], object]] = {}
    try:
        from memory_core.integrations.openai_agents import MemoryCoreSession
    except ImportError:
        pass
    else:
        found["openai-session"] = lambda memory: MemoryCoreSession("s1", memory, resource_id="u1")
    try:
        from memory_core.integrations.pydantic_ai import MessageHistory
    except ImportError:
        pass
    else:
        found["pydantic-history"] = lambda memory: MessageHistory(memory, "u1")
    try:
        from memory_core.integrations.google_adk import MemoryCoreMemoryService, MemoryCoreSessionService
    except ImportError:
        pass
    else:
        found["adk-sessions"] = MemoryCoreSessionService
        found["adk-memory"] = MemoryCoreMemoryService
    return found


SEAMS = _seams()
WRONG: dict[str, tuple[Callable[[], Any], str]] = {
    "url": (lambda: "sqlite:///app.db", "Memory.open('sqlite:///app.db'"),
    "storage": (InMemoryStorage, "wrap the store: Memory(storage, vector)"),
    "none": (lambda: None, "Memory.open(url"),
}


@pytest.mark.parametrize("seam", sorted(SEAMS))
@pytest.mark.parametrize("wrong", sorted(WRONG))
def test_a_seam_refuses_what_is_not_a_memory(seam: str, wrong: str) -> None:
    make, fix = WRONG[wrong]
    with pytest.raises(ValidationError) as caught:
        SEAMS[seam](make())
    assert caught.value.field == "memory" and fix in caught.value.reason, caught.value


@pytest.mark.skipif("adk-memory" not in SEAMS, reason="google-adk is not installed")
def test_the_adk_memory_service_needs_vectors() -> None:
    with pytest.raises(ValidationError) as caught:
        SEAMS["adk-memory"](Memory(InMemoryStorage()))
    assert caught.value.field == "memory.vector"
