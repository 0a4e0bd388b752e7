"""The traced semantic recall reads top-down (issue 29): it checks its whole
call once, builds one plan and composes the answer, going back into no
module but the telemetry spans of its two reads, the vector store's filter
and the backend-error guard; each id is checked once."""

from __future__ import annotations

import asyncio

from memory_core import SemanticRecall

from memory_core_bench.trace_recall import trace_recall

_RECALL_LAYER = ("memory_core.memory", "memory_core.recall", "memory_core.config", "memory_core.validation")


def test_recall_reads_top_down_and_checks_each_id_once() -> None:
    trace = asyncio.run(trace_recall(messages=1))
    assert trace.calls > 0 and "memory_core.recall:Recaller.recall" in trace.functions
    revisits = {module: trace.revisits_from[module] for module in _RECALL_LAYER if trace.revisits_from[module]}
    # recall -> telemetry: the storage read's span (the vector search's is opened by memory_core.hybrid)
    assert revisits == {"memory_core.recall": 1}, revisits
    assert dict(trace.reentries_from) == {
        "memory_core.hybrid": 1,  # the vector search's span
        "memory_core.recall": 1,  # the storage read's span
        "memory_core.reference_vector": 2,  # PointFilter.select, PointFilter.hits
        "memory_core.storage.lifecycle": 1,  # errors.guarded around the storage read (the vector's came first)
    }, trace.reentries_from
    assert trace.reentries <= 5  # issue 29's target
    assert trace.functions["memory_core.validation:check_id"] == 2  # thread_id and resource_id, once each


def test_the_rarer_recall_paths_check_each_id_once_too() -> None:
    """``exclude_recent`` reads its hits' windows after the page, and a
    resource-scoped recall naming only the thread reads the thread's owner
    first: neither checks an id a second time."""
    recent_left_out = asyncio.run(trace_recall(messages=3, semantic=SemanticRecall(exclude_recent=True)))
    assert recent_left_out.functions["memory_core.validation:check_id"] == 2
    owner_read = asyncio.run(trace_recall(messages=3, resource_id=None))
    assert owner_read.functions["memory_core.validation:check_id"] == 1  # thread_id; no resource_id given
