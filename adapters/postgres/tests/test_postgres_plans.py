"""EXPLAIN: every listing, count, window and id lookup is served by an index.

The planner is told to avoid sequential scans and sorts
(``enable_seqscan``/``enable_sort`` off): it still uses them when no index
can answer a query, so a ``Seq Scan`` on a table or a ``Sort`` node in such a
plan means a query shape has no index (a page would cost the whole match set).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from memory_core.query import MessageQuery, ThreadQuery
from memory_core_conformance.query_shapes import MESSAGE_QUERIES, META, THREAD_QUERIES

from memory_core_postgres import PostgresStorage, _sql


@pytest.fixture
async def store(make_store: Callable[..., PostgresStorage]) -> AsyncIterator[PostgresStorage]:
    storage = make_store()
    await storage.open()
    yield storage
    await storage.destroy()


def _nodes(plan: dict[str, Any]) -> list[dict[str, Any]]:
    found = [plan]
    for child in plan.get("Plans", []):
        found.extend(_nodes(child))
    return found


async def _plan(store: PostgresStorage, sql: str, params: list[Any]) -> list[dict[str, Any]]:
    async with store.pool.acquire() as conn, conn.transaction():
        await conn.execute("SET LOCAL enable_seqscan = off; SET LOCAL enable_sort = off")
        raw = await conn.fetchval(f"EXPLAIN (FORMAT JSON) {sql}", *params)
    return _nodes(json.loads(raw)[0]["Plan"])


def _indexes_used(nodes: list[dict[str, Any]], *, sorted_by_index: bool = True) -> set[str]:
    for node in nodes:
        assert not (node["Node Type"] == "Seq Scan" and node.get("Relation Name") in ("messages", "threads")), nodes
        if sorted_by_index:
            assert node["Node Type"] not in ("Sort", "Incremental Sort"), nodes
    return {node["Index Name"] for node in nodes if "Index Name" in node}


@pytest.mark.anyio
@pytest.mark.parametrize("name", sorted(MESSAGE_QUERIES))
async def test_message_page_uses_the_order_index(store: PostgresStorage, name: str) -> None:
    query = MESSAGE_QUERIES[name]
    used = _indexes_used(await _plan(store, *_sql.page_messages(query)))
    # With both a thread and its resource, either order index serves the page
    # (the planner picks by statistics); a thread alone needs the thread one.
    expected = {"messages_thread_order"} if query.thread_ids else {"messages_resource_order"}
    if query.thread_ids and query.resource_id:
        expected.add("messages_resource_order")
    assert expected & used, used


@pytest.mark.anyio
async def test_several_threads_search_the_thread_index(store: PostgresStorage) -> None:
    query = MessageQuery(("t1", "t2", "t3"), "r1", limit=10)
    # The merge of several threads is sorted; each thread is still an index search.
    used = _indexes_used(await _plan(store, *_sql.page_messages(query)), sorted_by_index=False)
    assert "messages_thread_order" in used or "messages_resource_order" in used, used


@pytest.mark.anyio
@pytest.mark.parametrize("name", sorted(THREAD_QUERIES))
async def test_thread_page_uses_the_order_index(store: PostgresStorage, name: str) -> None:
    query = THREAD_QUERIES[name]
    used = _indexes_used(await _plan(store, *_sql.page_threads(query)))
    expected = f"threads_{'resource_' if query.resource_id else ''}{query.order_field.split('_')[0]}"
    assert expected in used, used


@pytest.mark.anyio
async def test_include_windows_and_id_lookups_use_indexes(store: PostgresStorage) -> None:
    used = _indexes_used(await _plan(store, *_sql.message_windows(["m1", "m2"], [3, 1], [3, 0])))
    assert {"messages_pkey", "messages_thread_order"} <= used, used
    used = _indexes_used(await _plan(store, *_sql.read_state(["t1"], ["m1", "m2"])))
    assert {"messages_pkey", "threads_pkey"} <= used, used


@pytest.mark.anyio
async def test_metadata_only_thread_filter_can_use_the_gin_index(store: PostgresStorage) -> None:
    query = ThreadQuery(None, META, "created_at", True, 0, None, None)
    sql, params = _sql.page_threads(query)
    count_only = sql.split(" LEFT JOIN LATERAL")[0].removeprefix("SELECT c.total, w.* FROM (").removesuffix(") c")
    used = _indexes_used(await _plan(store, count_only, params[:1]))
    assert "threads_meta" in used, used


@pytest.mark.anyio
@pytest.mark.parametrize("after", [None, "r1"])
async def test_resource_listing_walks_both_indexes(store: PostgresStorage, after: str | None) -> None:
    # The union sorts at most two pages of ids; each side is an ordered index walk.
    used = _indexes_used(await _plan(store, *_sql.resource_ids(after, 10)), sorted_by_index=False)
    # Either index led by resource_id walks the owners in order.
    assert "resources_pkey" in used and used & {"threads_resource_created", "threads_resource_updated"}, used
