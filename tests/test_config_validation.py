"""Memory configuration and store URLs: every bad field is a ValidationError
naming it, raised when the object is built; accepted shorthand forms."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from memory_core import (
    MemoryConfig,
    SemanticRecall,
    ValidationError,
    WorkingMemory,
    connect,
)
from memory_core.validation import MAX_PER_PAGE

_CONFIG_CASES: list[tuple[Callable[[], object], str]] = [
    (lambda: MemoryConfig(last_messages=-1), "last_messages"),
    (lambda: MemoryConfig(last_messages=True), "last_messages"),
    (lambda: MemoryConfig(last_messages="10"), "last_messages"),  # type: ignore[arg-type]
    (lambda: MemoryConfig(last_messages=MAX_PER_PAGE + 1), "last_messages"),
    (lambda: MemoryConfig(semantic_recall="yes"), "semantic_recall"),  # type: ignore[arg-type]
    (lambda: MemoryConfig(semantic_recall={"top": 1}), "semantic_recall.top"),  # type: ignore[arg-type]
    (lambda: MemoryConfig(working_memory=True), "working_memory"),  # type: ignore[arg-type]
    (lambda: MemoryConfig(working_memory={"enabld": True}), "working_memory.enabld"),  # type: ignore[arg-type]
    (lambda: MemoryConfig(generate_title="title"), "generate_title"),  # type: ignore[arg-type]
    (lambda: SemanticRecall(top_k=None), "semantic_recall.top_k"),  # type: ignore[arg-type]
    (lambda: SemanticRecall(message_range=-1), "semantic_recall.message_range"),
    (lambda: SemanticRecall(message_range=2**63), "semantic_recall.message_range"),
    (lambda: SemanticRecall(message_range=1.5), "semantic_recall.message_range"),  # type: ignore[arg-type]
    (lambda: SemanticRecall(message_range=(1, 2, 3)), "semantic_recall.message_range"),  # type: ignore[arg-type]
    (lambda: SemanticRecall(message_range=(1, -2)), "semantic_recall.message_range.after"),
    (lambda: SemanticRecall(message_range={"before": "1"}), "semantic_recall.message_range.before"),  # type: ignore[arg-type]
    (lambda: SemanticRecall(message_range={"befor": 1}), "semantic_recall.message_range.befor"),  # type: ignore[arg-type]
    (lambda: SemanticRecall(scope="global"), "semantic_recall.scope"),  # type: ignore[arg-type]
    (lambda: SemanticRecall(scope=["thread"]), "semantic_recall.scope"),  # type: ignore[arg-type]
    (lambda: SemanticRecall(min_score=True), "semantic_recall.min_score"),  # type: ignore[arg-type]
    (lambda: SemanticRecall(min_score="0.3"), "semantic_recall.min_score"),  # type: ignore[arg-type]
    (lambda: SemanticRecall(min_score=1.5), "semantic_recall.min_score"),
    (lambda: SemanticRecall(min_score=float("nan")), "semantic_recall.min_score"),
    (lambda: WorkingMemory(enabled=1), "working_memory.enabled"),  # type: ignore[arg-type]
    (lambda: WorkingMemory(scope="user"), "working_memory.scope"),  # type: ignore[arg-type]
    (lambda: WorkingMemory(template=5), "working_memory.template"),  # type: ignore[arg-type]
    (lambda: WorkingMemory(schema="object"), "working_memory.schema"),  # type: ignore[arg-type]
    (lambda: WorkingMemory(schema={"type": "nonsense"}), "working_memory.schema"),
    (lambda: WorkingMemory(schema={"x": {1, 2}}), "working_memory.schema['x']"),
]


@pytest.mark.parametrize(("build", "field"), _CONFIG_CASES)
def test_config_fields_are_checked_at_construction(build: Callable[[], object], field: str) -> None:
    with pytest.raises(ValidationError) as info:
        build()
    assert info.value.field == field


def test_message_range_forms() -> None:
    assert SemanticRecall(message_range={"before": 1, "after": 3}).window() == (1, 3)  # type: ignore[arg-type]
    assert SemanticRecall(message_range={"after": 2}).window() == (0, 2)  # type: ignore[arg-type]
    assert SemanticRecall(message_range=[2, 1]).window() == (2, 1)  # type: ignore[arg-type]
    assert SemanticRecall(message_range=4).window() == (4, 4)
    config = MemoryConfig(semantic_recall={"topK": 2, "messageRange": {"before": 1, "after": 2}})  # type: ignore[arg-type]
    semantic = config.semantic()
    assert semantic is not None and (semantic.top_k, semantic.window()) == (2, (1, 2))


@pytest.mark.anyio
@pytest.mark.parametrize("url", ["memory://?x=1", "memory://somewhere", "memory://a/b"])
async def test_memory_url_with_a_path_or_options_is_rejected(url: str) -> None:
    with pytest.raises(ValidationError) as raised:
        await connect(url)
    assert raised.value.field == "url"
