"""The query-plan kit's read shapes are the reads they are named after: run
against the reference store, each returns what its public read would."""

from __future__ import annotations

import pytest
from memory_core_conformance.plans import READ_SHAPES, PlanStep, assert_flat, load_long_thread

from memory_core.reference import InMemoryStorage

pytestmark = pytest.mark.anyio


async def test_read_shapes_answer_as_their_public_reads() -> None:
    store = InMemoryStorage()
    ids = await load_long_thread(store, count=400)
    parts = {name: await store._read(shape(ids)) for name, shape in READ_SHAPES.items()}
    assert [m.id for m in parts["newest 20"].messages] == ids[::-1][:20]
    assert parts["newest 20"].message_total == 400
    assert [m.id for m in parts["newest 20 no total"].messages] == ids[::-1][:21]
    assert [m.id for m in parts["cursor page"].messages] == ids[:200][::-1][:21]
    assert [m.id for m in parts["offset page"].messages] == ids[::-1][200:220]
    assert [m.id for m in parts["include window"].windows[0]] == ids[190:211]
    assert (parts["count only"].message_total, parts["count only"].messages) == (400, [])
    assert parts["resource page"].message_total == 450  # the long thread and its 50-message neighbour
    assert [m.id for m in parts["date page no total"].messages] == ids[:201][::-1][:21]
    recall = parts["recall"]
    assert "long" in recall.threads and len(recall.windows) == 2 and len(recall.messages) == 20


def test_assert_flat_names_the_shape_and_the_offending_node() -> None:
    indexed = PlanStep("index", "messages", "messages_thread_order", "SEARCH messages USING INDEX")
    assert_flat("newest 20", [indexed, PlanStep("limit", None, None, "LIMIT 20")])
    with pytest.raises(AssertionError, match="newest 20: messages is scanned"):
        assert_flat("newest 20", [PlanStep("scan", "messages", None, "SCAN messages")])
    with pytest.raises(AssertionError, match="cursor page: rows are sorted"):
        assert_flat("cursor page", [indexed, PlanStep("sort", None, None, "USE TEMP B-TREE FOR ORDER BY")])
    with pytest.raises(AssertionError, match="found no plan"):
        assert_flat("recall", [])
    assert_flat("threads", [PlanStep("scan", "threads", None, "SCAN threads")])  # another table may be scanned
