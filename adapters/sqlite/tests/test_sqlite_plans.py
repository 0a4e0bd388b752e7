"""EXPLAIN QUERY PLAN: every listing, count and window uses an index.

A plan line ``SCAN messages`` / ``SCAN threads`` (no index) is a full table
scan; ``USE TEMP B-TREE FOR ORDER BY`` means the order is not read from an
index, so a page would cost the size of the whole match set.

The second half runs the shared query-plan kit (:mod:`memory_core_conformance.plans`)
on a 10^4-message thread loaded without ``ANALYZE``: every statement
:func:`memory_core_sqlite._sql.read_plan` builds for a public read (the very
statements ``_read`` executes) must search an index and sort nothing, and an
unfiltered total must not touch the messages at all (it is a counter read).
"""

from __future__ import annotations

import asyncio
import re
import sqlite3
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from memory_core.plan import ReadPlan
from memory_core.query import MessageQuery
from memory_core_conformance.plans import READ_SHAPES, PlanStep, assert_flat, load_long_thread
from memory_core_conformance.query_shapes import MESSAGE_QUERIES, THREAD_QUERIES

from memory_core_sqlite import SQLiteStorage, _sql

# One worker runs this module (its module-scoped fixture once): the README's `--dist loadgroup`.
pytestmark = pytest.mark.xdist_group("sqlite_plans")


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SQLiteStorage]:
    storage = SQLiteStorage(tmp_path / "plans.db")
    await storage.open()
    yield storage
    await storage.destroy()


async def _plan(store: SQLiteStorage, sql: str, params: list[Any]) -> list[str]:
    def explain(conn: sqlite3.Connection) -> list[str]:
        return [str(row[3]) for row in conn.execute(f"EXPLAIN QUERY PLAN {sql}", params)]

    return await store._run(explain)


def _assert_indexed(plan: list[str], *, sorted_by_index: bool = True) -> None:
    for line in plan:
        assert line not in ("SCAN messages", "SCAN threads"), plan
        if line.startswith(("SCAN messages", "SCAN threads", "SEARCH messages", "SEARCH threads")):
            assert "INDEX" in line, plan
    if sorted_by_index:
        assert not any("TEMP B-TREE" in line for line in plan), plan


@pytest.mark.anyio
@pytest.mark.parametrize("name", sorted(MESSAGE_QUERIES))
async def test_message_listing_and_count_use_an_index(store: SQLiteStorage, name: str) -> None:
    query = MESSAGE_QUERIES[name]
    plan = await _plan(store, *_sql.list_messages(query))
    _assert_indexed(plan)
    expected = "messages_thread_order" if query.thread_ids else "messages_resource_order"
    assert any(line.startswith("SEARCH messages") and expected in line for line in plan), plan
    _assert_indexed(await _plan(store, *_sql.count_messages(query)))


@pytest.mark.anyio
async def test_several_threads_search_the_thread_index(store: SQLiteStorage) -> None:
    query = MessageQuery(("t1", "t2", "t3"), "r1", limit=10)
    plan = await _plan(store, *_sql.list_messages(query))
    # The merge of several threads is sorted; each thread is still a search.
    _assert_indexed(plan, sorted_by_index=False)
    assert any(line.startswith("SEARCH messages") and "messages_thread_order" in line for line in plan), plan


@pytest.mark.anyio
@pytest.mark.parametrize("name", sorted(THREAD_QUERIES))
async def test_thread_listing_and_count_use_an_index(store: SQLiteStorage, name: str) -> None:
    query = THREAD_QUERIES[name]
    plan = await _plan(store, *_sql.list_threads(query))
    _assert_indexed(plan)
    order_index = f"threads_{'resource_' if query.resource_id else ''}{query.order_field.split('_')[0]}"
    assert any(order_index in line for line in plan), plan
    _assert_indexed(await _plan(store, *_sql.count_threads(query)))


@pytest.mark.anyio
async def test_include_window_and_id_lookups_use_indexes(store: SQLiteStorage) -> None:
    plan = await _plan(store, *_sql.message_window("m1", 3, 3))
    _assert_indexed(plan)
    assert sum("messages_thread_order" in line for line in plan) == 2, plan
    plan = await _plan(
        store,
        f"SELECT {_sql.MESSAGE_COLUMNS} FROM messages WHERE id IN (SELECT value FROM json_each(?))",
        [_sql.id_list(["a", "b"])],
    )
    _assert_indexed(plan)


@pytest.mark.anyio
@pytest.mark.parametrize("after", [None, "r1"])
async def test_resource_listing_merges_two_index_searches(store: SQLiteStorage, after: str | None) -> None:
    plan = await _plan(store, *_sql.resource_ids(after, 10))
    _assert_indexed(plan)
    # Either index led by resource_id walks the owners in order.
    assert any(line.startswith("SEARCH threads") and "threads_resource_" in line for line in plan), plan
    assert any(line.startswith("SEARCH resources") and "INDEX" in line for line in plan), plan
    assert any("MERGE" in line for line in plan), plan  # the union of two ordered searches, no sort


# ---------------------------------------------------------------------- the long thread (plans kit)

_LINE = re.compile(r"^(SEARCH|SCAN) (\S+)(?: USING (?:COVERING )?(?:INDEX (\S+)|(PRIMARY KEY|INTEGER PRIMARY KEY)))?")


def _step(detail: str) -> PlanStep:
    """One ``EXPLAIN QUERY PLAN`` line as a :class:`PlanStep`: ``SEARCH`` through
    an index is a bounded index read; ``SCAN`` of a table, or a walk of a whole
    index (``SCAN t USING INDEX``), or an automatic index built on the fly, is a
    scan; a temporary B-tree is a sort; subquery and compound markers are other."""
    if "TEMP B-TREE" in detail:
        return PlanStep("sort", None, None, detail)
    found = _LINE.match(detail)
    if found is None or found[2].startswith("(") or detail.startswith("SCAN CONSTANT ROW"):
        return PlanStep("other", None, None, detail)
    verb, relation, index = found[1], found[2], found[3] or found[4]
    if "VIRTUAL TABLE" in detail:  # json_each over the bound id list
        return PlanStep("other", relation, None, detail)
    if verb == "SEARCH" and index is not None and "AUTOMATIC" not in detail:
        return PlanStep("index", relation, index, detail)
    return PlanStep("scan", relation, index, detail)


def _explain(conn: sqlite3.Connection, sql: str, params: list[Any]) -> list[PlanStep]:
    """The plan of one statement, plus a ``limit`` step per LIMIT counter in
    its program (``EXPLAIN QUERY PLAN`` does not show limits)."""
    steps = [_step(str(row[3])) for row in conn.execute(f"EXPLAIN QUERY PLAN {sql}", params)]
    limits = sum(1 for row in conn.execute(f"EXPLAIN {sql}", params) if row[1] == "DecrJumpZero")
    return steps + [PlanStep("limit", None, None, "LIMIT counter (DecrJumpZero)")] * limits


def _plan_steps(conn: sqlite3.Connection, plan: ReadPlan) -> list[PlanStep]:
    """Every step of every statement ``_read(plan)`` runs."""
    return [step for sql, params in _sql.read_plan(plan) for step in _explain(conn, sql, params)]


async def _load(path: Path) -> list[str]:
    store = SQLiteStorage(path)
    await store.open()
    try:
        return await load_long_thread(store)
    finally:
        await store.close()


@pytest.fixture(scope="module")
def long_thread(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """A file holding the kit's long thread (bulk saves, no ANALYZE), once per
    module, and the thread's message ids oldest first."""
    path = tmp_path_factory.mktemp("plans") / "long.db"
    ids = asyncio.run(_load(path))
    conn = sqlite3.connect(path)
    try:  # the planner's defaults: no statistics were gathered
        assert conn.execute("SELECT name FROM sqlite_master WHERE name = 'sqlite_stat1'").fetchone() is None
    finally:
        conn.close()
    return path, ids


@pytest.fixture
def long_conn(long_thread: tuple[Path, list[str]]) -> Iterator[sqlite3.Connection]:
    conn = sqlite3.connect(long_thread[0])
    try:
        yield conn
    finally:
        conn.close()


@pytest.mark.parametrize("shape", sorted(READ_SHAPES))
def test_each_read_of_a_long_thread_searches_an_index_and_sorts_nothing(
    long_thread: tuple[Path, list[str]], long_conn: sqlite3.Connection, shape: str
) -> None:
    plan = READ_SHAPES[shape](long_thread[1])
    steps = _plan_steps(long_conn, plan)
    assert_flat(shape, steps)
    page = plan.messages
    if plan.windows or (page is not None and page.limit != 0):
        by_resource = page is not None and page.thread_ids is None
        expected = "messages_resource_order" if by_resource else "messages_thread_order"
        assert any(s.kind == "index" and s.relation == "messages" and s.index == expected for s in steps), steps
        assert any(s.kind == "limit" for s in steps), steps


def _counted_unfiltered(plan: ReadPlan) -> bool:
    return plan.messages is not None and plan.messages.count and plan.messages.unfiltered


COUNTED = sorted(name for name, make in READ_SHAPES.items() if _counted_unfiltered(make(["m"] * 8)))
"""The shapes whose total is an unfiltered count (newest 20, offset page, count only, resource page, recall)."""


@pytest.mark.parametrize("shape", COUNTED)
def test_an_unfiltered_total_reads_a_counter_not_the_messages(
    long_thread: tuple[Path, list[str]], long_conn: sqlite3.Connection, shape: str
) -> None:
    query = READ_SHAPES[shape](long_thread[1]).messages
    assert query is not None
    steps = _explain(long_conn, *_sql.count_messages(query))
    assert steps and not any(s.relation == "messages" for s in steps), steps
    counter = "threads" if query.thread_ids else "resource_message_counts"
    assert any(s.kind == "index" and s.relation == counter for s in steps), steps


def test_a_page_without_a_total_counts_nothing(long_thread: tuple[Path, list[str]]) -> None:
    plan = READ_SHAPES["newest 20 no total"](long_thread[1])
    (statement,) = _sql.read_plan(plan)
    assert "COUNT" not in statement[0].upper() and "message_count" not in statement[0], statement


def test_a_read_that_loses_its_index_fails_the_check(tmp_path: Path) -> None:
    """The check bites: without the thread-order index the newest page scans
    and sorts the messages, and :func:`assert_flat` says so."""
    path = tmp_path / "noindex.db"
    ids = asyncio.run(_load(path))
    conn = sqlite3.connect(path)
    try:
        conn.execute("DROP INDEX messages_thread_order")
        steps = _plan_steps(conn, READ_SHAPES["newest 20 no total"](ids))
    finally:
        conn.close()
    with pytest.raises(AssertionError, match="newest 20 no total"):
        assert_flat("newest 20 no total", steps)
