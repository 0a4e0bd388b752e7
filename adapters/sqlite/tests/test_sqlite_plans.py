"""EXPLAIN QUERY PLAN: every listing, count and window uses an index.

A plan line ``SCAN messages`` / ``SCAN threads`` (no index) is a full table
scan; ``USE TEMP B-TREE FOR ORDER BY`` means the order is not read from an
index, so a page would cost the size of the whole match set.
"""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from memory_core.query import MessageQuery
from memory_core_conformance.query_shapes import MESSAGE_QUERIES, THREAD_QUERIES

from memory_core_sqlite import SQLiteStorage, _sql


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
