"""The traced semantic recall stays top-down on the core's side: the facade
and the recall composition go back into no layer beyond the telemetry spans
around the vector search and the storage read and the merge of the read's
parts, and each id is checked no more often than today."""

from __future__ import annotations

import asyncio

from memory_core_bench.trace_recall import trace_recall

_RECALL_LAYER = ("memory_core.memory", "memory_core.recall", "memory_core.config", "memory_core.arguments")


def test_recall_layer_revisits_nothing_but_spans_and_the_merge() -> None:
    trace = asyncio.run(trace_recall(messages=1))
    assert trace.calls > 0 and "memory_core.recall:Recaller.recall" in trace.functions
    revisits = {module: trace.revisits_from[module] for module in _RECALL_LAYER if trace.revisits_from[module]}
    # recall -> telemetry (storage read span), compose -> storage (merge); the vector search's span
    # is opened by memory_core.hybrid, which ranks
    assert revisits == {"memory_core.recall": 2}, revisits
    assert trace.functions["memory_core.validation:check_id"] <= 7
