"""Recall over the storage under test (R-SOURCE, R-BUDGET, R-RECALL checks).

``Memory.recall`` composes its answer in the core from storage reads; these
cases run it over the adapter's store (no vector store: history page and
``include`` windows) and compare it with the reference store's answer.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import pytest
from hypothesis import strategies as st

from memory_core.errors import ValidationError
from memory_core.memory import Memory, MemoryConfig
from memory_core.models import Include, Message, MessageFilter, RecallResult
from memory_core.storage import BaseStorage, message_key
from memory_core.tokens import EstimateTokenCounter, message_tokens, tool_units
from memory_core_conformance.cases._base import SuiteBase, ids, paired_stores, unchanged_after
from memory_core_conformance.cases.properties import run_examples
from memory_core_conformance.compare import assert_same, capture
from memory_core_conformance.harness import StorageFactory, at, message, thread

__all__ = ["RecallCases"]

_counter = EstimateTokenCounter()


def _call(text: str, call: str) -> dict[str, Any]:
    """An assistant message calling a tool (Mastra v2 content)."""
    part = {"type": "tool-invocation", "toolInvocation": {"toolCallId": call, "toolName": "search", "args": {}}}
    return {"format": 2, "parts": [{"type": "text", "text": text}, part]}


# One conversation step: a user turn, an assistant turn, or a tool call with
# 1-2 results; text sizes vary so budgets cut in different places.
_steps = st.lists(
    st.tuples(st.sampled_from(["user", "assistant", "call"]), st.integers(0, 120), st.integers(1, 2)),
    min_size=1,
    max_size=14,
)


def _conversation(steps: list[tuple[str, int, int]]) -> list[Message]:
    out: list[Message] = []
    for kind, size, results in steps:
        n = len(out)
        if kind == "call":
            out.append(message(f"m{n:02}", role="assistant", content=_call("x" * size, f"c{n}")))
            out += [message(f"m{n:02}r{k}", role="tool", content="r" * (size // 2 + k)) for k in range(results)]
        else:
            out.append(message(f"m{n:02}", role=kind, content="w" * size))
    # One second apart, saved in one batch: R-ORDER decides ties the same everywhere.
    return [Message(**{**_fields(m), "created_at": at(i)}) for i, m in enumerate(out)]


def _fields(item: Message) -> dict[str, Any]:
    return {name: getattr(item, name) for name in Message.__dataclass_fields__ if name != "sequence"}


def _check_budget(result: RecallResult, unbudgeted: RecallResult, max_tokens: int) -> None:
    """R-BUDGET on one answer: it fits, it is the newest part of the
    unbudgeted answer, and no tool call is separated from its results."""
    counter = EstimateTokenCounter()
    used = sum(message_tokens(m, counter) for m in result.messages)
    assert result.tokens == used <= max_tokens
    assert result.dropped == len(unbudgeted.messages) - len(result.messages)
    everything = sorted(unbudgeted.messages, key=message_key)
    kept = {m.id for m in result.messages}
    assert [m.id for m in everything if m.id in kept] == [m.id for m in everything[len(everything) - len(kept) :]]
    for unit in tool_units(everything):
        assert len({m.id in kept for m in unit}) == 1, f"split unit {[m.id for m in unit]}"


class RecallCases(SuiteBase):
    """``Memory.recall`` composed over the store under test."""

    async def test_r_source_marks_recent_and_include_and_shows_gaps(self, store: BaseStorage) -> None:
        await store.save_thread(thread("t1"))
        await store.save_messages([message(f"m{n:02}", created_at=at(n)) for n in range(1, 21)])
        memory = Memory(store, owns_stores=False)
        result = await memory.recall("t1", "r1", per_page=4, include=[Include("m05", 1, 1)])
        assert ids(result.messages) == ["m04", "m05", "m06", "m17", "m18", "m19", "m20"]
        assert result.sources == ["include"] * 3 + ["recent"] * 4
        assert result.gaps == [("m06", "m17")]
        assert result.total == 20 and result.has_more
        # A window that ends right before the page touches it: no gap.
        touching = await memory.recall("t1", "r1", per_page=4, include=[{"id": "m15", "with_next": 1}])
        assert ids(touching.messages) == ["m15", "m16", "m17", "m18", "m19", "m20"]
        assert touching.sources == ["include", "include", "recent", "recent", "recent", "recent"]
        assert touching.gaps == []
        # A message both recent and included is "recent"; two separate windows leave two gaps.
        both = await memory.recall("t1", "r1", per_page=2, include=[Include("m02"), Include("m10"), Include("m19")])
        assert ids(both.messages) == ["m02", "m10", "m19", "m20"]
        assert both.sources == ["include", "include", "recent", "recent"]
        assert both.gaps == [("m02", "m10"), ("m10", "m19")]

    async def test_r_source_the_widest_windows_are_the_whole_thread(self, store: BaseStorage) -> None:
        """``with_previous``/``with_next`` are valid up to 2**63 - 1; recall
        reads each window one wider, which must not step past int64."""
        await store.save_thread(thread("t1"))
        await store.save_messages([message(f"m{n}", created_at=at(n)) for n in range(1, 6)])
        memory = Memory(store, owns_stores=False)
        widest = 2**63 - 1
        result = await memory.recall("t1", "r1", per_page=0, include=[Include("m3", widest, widest)])
        assert ids(result.messages) == ["m1", "m2", "m3", "m4", "m5"]
        assert result.sources == ["include"] * 5 and result.gaps == []

    async def test_r_source_the_page_alone_has_gaps_only_where_a_filter_hides_neighbours(
        self, store: BaseStorage
    ) -> None:
        await store.save_thread(thread("t1"))
        topics = ["a", "b", "a", "a", "b", "a"]
        await store.save_messages(
            [message(f"m{n}", metadata={"topic": t}, created_at=at(n)) for n, t in enumerate(topics)]
        )
        memory = Memory(store, owns_stores=False)
        plain = await memory.recall("t1", "r1", per_page=4)
        assert ids(plain.messages) == ["m2", "m3", "m4", "m5"] and plain.gaps == []
        # A budget cut keeps the newest run: still one run, no gap.
        cut = await memory.recall("t1", "r1", per_page=4, max_tokens=message_tokens(plain.messages[-1], _counter) * 2)
        assert cut.dropped > 0 and cut.gaps == []
        # Filtered, the store cannot tell which matches are neighbours: every pair is a gap.
        filtered = await memory.recall("t1", "r1", per_page=4, filter=MessageFilter(metadata={"topic": "a"}))
        assert ids(filtered.messages) == ["m0", "m2", "m3", "m5"]
        assert filtered.gaps == [("m0", "m2"), ("m2", "m3"), ("m3", "m5")]

    async def test_r_source_windows_from_other_threads_are_gaps(self, store: BaseStorage) -> None:
        await store.save_thread(thread("t1"))
        await store.save_thread(thread("t2"))
        await store.save_messages([message(f"a{n}", "t1", created_at=at(n)) for n in range(3)])
        await store.save_messages([message(f"b{n}", "t2", created_at=at(10 + n)) for n in range(3)])
        memory = Memory(store, owns_stores=False)
        result = await memory.recall("t1", "r1", per_page=2, include=[Include("b1", 1, 0)])
        assert ids(result.messages) == ["a1", "a2", "b0", "b1"]
        assert result.sources == ["recent", "recent", "include", "include"]
        assert result.gaps == [("a2", "b0")]

    async def test_r_budget_keeps_the_newest_and_never_splits_a_tool_call(self, store: BaseStorage) -> None:
        await store.save_thread(thread("t1"))
        steps = [("user", 40, 1), ("call", 40, 2), ("assistant", 40, 1), ("call", 8, 1), ("user", 8, 1)]
        await store.save_messages(_conversation(steps))
        memory = Memory(store, owns_stores=False)
        everything = await memory.recall("t1", "r1", per_page=False)
        assert ids(everything.messages) == ["m00", "m01", "m01r0", "m01r1", "m04", "m05", "m05r0", "m07"]
        assert everything.tokens is None and everything.dropped == 0
        # Units from the newest: m07 costs 6, the call m05 with its result 42 + 5: 53 in all; m04 (14) would
        # make 67.
        fitted = await memory.recall("t1", "r1", per_page=False, max_tokens=60)
        assert ids(fitted.messages) == ["m05", "m05r0", "m07"]
        assert fitted.tokens == 53 and fitted.dropped == 5 and fitted.sources == ["recent"] * 3
        # m05r0 alone would fit in 20 but not without its call: neither is kept.
        assert ids((await memory.recall("t1", "r1", per_page=False, max_tokens=20)).messages) == ["m07"]
        nothing = await memory.recall("t1", "r1", per_page=False, max_tokens=0)
        assert nothing.messages == [] and nothing.tokens == 0 and nothing.total == 8
        for budget in (0, 6, 52, 53, 200, 10_000):
            _check_budget(await memory.recall("t1", "r1", per_page=False, max_tokens=budget), everything, budget)

    async def test_r_budget_and_r_recall_reject_bad_input_before_io(self, store: BaseStorage) -> None:
        await store.save_thread(thread("t1"))
        memory = Memory(store, owns_stores=False)
        bad_budgets: list[Any] = [-1, 1.5, "10", True]
        for bad in bad_budgets:
            error = await unchanged_after(store, partial(memory.recall, "t1", "r1", max_tokens=bad))
            assert "max_tokens" in str(error)
        error = await unchanged_after(store, partial(memory.recall, "t1", "r1", "what did I say?"))
        assert "vector_search_string" in str(error) and "semantic recall is off" in str(error)
        with pytest.raises(ValidationError, match="semantic_recall"):
            Memory(store, config=MemoryConfig(semantic_recall=True), owns_stores=False)
        with pytest.raises(ValidationError, match="token_counter"):
            Memory(store, token_counter=len, owns_stores=False)  # type: ignore[arg-type]

    @pytest.mark.conformance_property
    def test_r_budget_and_r_source_match_the_reference_property(self, storage_factory: StorageFactory) -> None:
        strategy = st.tuples(
            _steps,
            st.none() | st.integers(0, 300),
            st.integers(0, 8),
            st.lists(st.tuples(st.integers(0, 20), st.integers(0, 2), st.integers(0, 2)), max_size=2),
        )

        async def body(example: tuple[list[tuple[str, int, int]], int | None, int, list[tuple[int, int, int]]]) -> None:
            steps, max_tokens, per_page, wanted = example
            conversation = _conversation(steps)
            includes = [Include(conversation[n % len(conversation)].id, p, q) for n, p, q in wanted]
            async with paired_stores(storage_factory) as (sut, reference, _):
                answers = []
                for store in (sut, reference):
                    await store.save_thread(thread("t1"))
                    await store.save_messages(conversation)
                    memory = Memory(store, owns_stores=False)
                    answers.append(
                        await capture(
                            memory.recall("t1", "r1", per_page=per_page, include=includes, max_tokens=max_tokens)
                        )
                    )
                assert_same(
                    answers[0], answers[1], f"recall(per_page={per_page}, include={includes}, max_tokens={max_tokens})"
                )
                if max_tokens is not None:
                    unbudgeted = await Memory(reference, owns_stores=False).recall(
                        "t1", "r1", per_page=per_page, include=includes
                    )
                    _check_budget(answers[1], unbudgeted, max_tokens)

        run_examples("r_budget_source", body, strategy)
