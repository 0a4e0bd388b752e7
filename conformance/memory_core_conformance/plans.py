"""Query-plan kit: do the reads of a long thread cost what they return?

An optional check for adapters whose backend can explain a query (SQL
``EXPLAIN``, MongoDB ``explain``). It loads one long thread
(:data:`LONG_THREAD` messages, like a long agent session) through the public
API, names the :class:`~memory_core.plan.ReadPlan` each public read sends to
the adapter (:data:`READ_SHAPES`), and judges the backend's plan for it once
the adapter's test has normalised it into :class:`PlanStep` nodes
(:func:`assert_flat`): no scan of the messages table without an index and no
sort node, so the rows come from an index in key order and a limit stops the
read (R-PAGE: a page's cost must not grow with the thread).

An adapter test, in outline (see the SQLite and PostgreSQL adapters'
``test_*_plans.py``)::

    ids = await load_long_thread(store)             # once per module
    for name, shape in READ_SHAPES.items():
        steps = my_explain(store, shape(ids))        # the adapter's own EXPLAIN, normalised
        assert_flat(name, steps)

The load is done without ``ANALYZE`` (or any statistics refresh) on purpose:
a store right after a bulk import has the planner's defaults, and the plan
must hold then too.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from memory_core.clock import to_us
from memory_core.plan import ReadPlan
from memory_core.query import MessageQuery
from memory_core.storage import BaseStorage
from memory_core_conformance.harness import at, message, thread

__all__ = ["LONG_THREAD", "READ_SHAPES", "PlanStep", "assert_flat", "load_long_thread"]

LONG_THREAD = 10_000
"""Messages in the long thread: 10^4, where a count or a sort of the thread
already costs milliseconds on every backend."""

LONG_THREAD_ID = "long"
LONG_RESOURCE_ID = "r-long"
_BATCH = 1_000
_PAGE = 20


async def load_long_thread(
    store: BaseStorage,
    *,
    thread_id: str = LONG_THREAD_ID,
    resource_id: str = LONG_RESOURCE_ID,
    count: int = LONG_THREAD,
) -> list[str]:
    """Save one thread of ``count`` messages (created one second apart from
    :data:`~memory_core_conformance.harness.T0`) in batches of 1,000, plus a
    small second thread of the same resource and a thread of another
    resource, so that neither the resource index nor the thread index is the
    whole table.

    Returns:
        the long thread's message ids, oldest first (``f"{thread_id}-{i:06}"``).
    """
    await store.save_thread(thread(thread_id, resource_id))
    await store.save_thread(thread(f"{thread_id}-side", resource_id))
    await store.save_thread(thread(f"{thread_id}-other", f"{resource_id}-other"))
    ids = [f"{thread_id}-{i:06}" for i in range(count)]
    for start in range(0, count, _BATCH):
        batch = ids[start : start + _BATCH]
        await store.save_messages([message(mid, thread_id, created_at=at(start + k)) for k, mid in enumerate(batch)])
    for tid in (f"{thread_id}-side", f"{thread_id}-other"):
        await store.save_messages([message(f"{tid}-{k}", tid, created_at=at(k)) for k in range(50)])
    return ids


def _newest(*, count: bool = True, offset: int = 0, after_index: int | None = None, ids_len: int = 0) -> MessageQuery:
    """The history page of ``recall`` / the seams: newest first, ``_PAGE``
    rows (one more without a total, to learn ``has_more``)."""
    after = None if after_index is None else (to_us(at(after_index)), after_index + 1)
    limit = _PAGE if count and after is None else _PAGE + 1
    return MessageQuery(
        (LONG_THREAD_ID,), LONG_RESOURCE_ID, descending=True, offset=offset, limit=limit, after=after, count=count
    )


READ_SHAPES: dict[str, Callable[[list[str]], ReadPlan]] = {
    "newest 20": lambda ids: ReadPlan(messages=_newest()),
    "newest 20 no total": lambda ids: ReadPlan(messages=_newest(count=False)),
    "cursor page": lambda ids: ReadPlan(messages=_newest(count=False, after_index=len(ids) // 2)),
    "offset page": lambda ids: ReadPlan(messages=_newest(offset=len(ids) // 2)),
    "include window": lambda ids: ReadPlan(windows=((ids[len(ids) // 2], 10, 10),)),
    "count only": lambda ids: ReadPlan(messages=MessageQuery((LONG_THREAD_ID,), LONG_RESOURCE_ID, limit=0)),
    "resource page": lambda ids: ReadPlan(messages=MessageQuery(None, LONG_RESOURCE_ID, descending=True, limit=_PAGE)),
    "date page no total": lambda ids: ReadPlan(
        messages=MessageQuery(
            (LONG_THREAD_ID,),
            LONG_RESOURCE_ID,
            created_to_us=to_us(at(len(ids) // 2)),
            descending=True,
            limit=_PAGE + 1,
            count=False,
        )
    ),
    "recall": lambda ids: ReadPlan(
        threads=(LONG_THREAD_ID,),
        messages=_newest(),
        windows=((ids[len(ids) // 5], 3, 3), (ids[len(ids) * 3 // 4], 3, 3)),
    ),
}
"""Each public read of the long thread, as the plan the core sends
(:meth:`~memory_core.storage.BaseStorage._read`), given the loaded ids:
the newest 20 with and without a total (``recall`` and the framework seams),
a cursor page and an offset page halfway back, an include window in the
middle, the total alone (``per_page=0``), the resource-wide page, a date-
bounded page without a total, and a recall (thread row, newest 20, two
context windows)."""


PlanKind = Literal["index", "scan", "sort", "limit", "other"]


@dataclass(frozen=True)
class PlanStep:
    """One node of a backend's query plan, normalised by the adapter's test.

    Attributes:
        kind: ``"index"`` (rows read through an index, in its order),
            ``"scan"`` (a table or collection read without an index, or a
            bitmap heap scan that reads every matching row before ordering),
            ``"sort"`` (rows ordered after reading: a sort node, a temporary
            B-tree, an in-memory SORT stage), ``"limit"``, or ``"other"``.
        relation: the table or collection the node reads, or None.
        index: the index it uses, or None.
        detail: the backend's own text for the node, shown on failure.
    """

    kind: PlanKind
    relation: str | None
    index: str | None
    detail: str


def assert_flat(shape: str, steps: list[PlanStep], *, table: str = "messages") -> None:
    """Fail unless the plan for ``shape`` reads ``table`` only through an
    index and sorts nothing: the read then stops after the rows it returns,
    whatever the thread's length.

    Args:
        shape: the read's name (a key of :data:`READ_SHAPES`), for the message.
        steps: every node of every statement the adapter runs for it.
        table: the relation that must never be scanned.

    Raises:
        AssertionError: naming the shape and listing the plan.
    """
    shown = "\n".join(f"  {s.kind:<6} {s.relation or '-'} {s.index or '-'}: {s.detail}" for s in steps)
    scans = [s for s in steps if s.kind == "scan" and s.relation == table]
    sorts = [s for s in steps if s.kind == "sort"]
    assert steps, f"{shape}: the adapter's test found no plan at all"
    assert not scans, f"{shape}: {table} is scanned without an index, so the read grows with the thread:\n{shown}"
    assert not sorts, f"{shape}: rows are sorted after reading instead of read in index order:\n{shown}"
