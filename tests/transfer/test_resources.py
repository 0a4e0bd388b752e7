"""Whole-store export and copy carry every resource the store lists
(R-RESOURCES): records without threads too, on every backend, with the
trailer's counts and digests agreeing on both sides of a copy."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from memory_core import Message, Resource, Storage, Thread
from memory_core.transfer import copy_store, export_lines, summarize
from tests.transfer.conftest import NewStore

pytestmark = pytest.mark.anyio

KINDS = ["memory", "sqlite", "valkey", "secantus", "postgres"]
T0 = datetime(2024, 5, 1, tzinfo=UTC)
WITH_RECORDS = ["both", "emptied", "lonely", "ünï"]
"""The resources _seed leaves with a record, in id order."""
LISTED = ["both", "emptied", "lonely", "threads-only", "ünï"]
"""Every resource _seed leaves (a record, threads or both), in id order."""


async def _seed(store: Storage) -> None:
    """Records only, threads only, both; a resource whose last thread was
    deleted (its record stays); an erased one (nothing stays)."""
    await store.update_resource("lonely", working_memory="# remembered", metadata={"plan": "pro"})
    await store.save_resource(Resource("ünï", None, {"n": 1}, T0, T0))
    await store.save_resource(Resource("both", "wm", {}, T0, T0))
    await store.save_thread(Thread("t1", "both", "first", {}, T0, T0))
    await store.save_thread(Thread("t2", "threads-only", "second", {}, T0, T0))
    await store.save_messages(
        [Message("m1", "t1", "user", "hi", created_at=T0), Message("m2", "t2", "assistant", "yo", created_at=T0)]
    )
    await store.update_resource("emptied", working_memory="kept")
    await store.save_thread(Thread("t3", "emptied", "gone", {}, T0, T0))
    await store.delete_thread("t3")
    await store.update_resource("erased", working_memory="x")
    await store.save_thread(Thread("t4", "erased", "gone", {}, T0, T0))
    await store.delete_resource("erased")


@pytest.mark.parametrize("kind", KINDS)
async def test_whole_store_export_includes_records_without_threads(kind: str, new_store: NewStore) -> None:
    source = await new_store(kind)
    await _seed(source)
    records = [json.loads(line) async for line in export_lines(source, page_size=2)]
    assert [r["id"] for r in records if r["kind"] == "resource"] == WITH_RECORDS
    assert [r["id"] for r in records if r["kind"] == "thread"] == ["t1", "t2"]
    trailer = records[-1]
    assert trailer["counts"] == {"resources": 4, "threads": 2, "messages": 2}
    assert sorted(trailer["resources"]) == LISTED  # a digest for each, records or threads
    assert records[0]["messages"] == 2


# A chain through every backend, each hop verified by the copy itself.
HOPS = [("memory", "sqlite"), ("sqlite", "valkey"), ("valkey", "secantus"), ("secantus", "postgres")]


@pytest.mark.parametrize(("first", "second"), HOPS, ids=[f"{a}-{b}" for a, b in HOPS])
async def test_copy_carries_records_without_threads(first: str, second: str, new_store: NewStore) -> None:
    source, destination = await new_store(first), await new_store(second)
    await _seed(source)
    report = await copy_store(source, destination, page_size=2, batch_size=2)
    assert report.verified, report.difference
    assert report.imported.written == {"resources": 4, "threads": 2, "messages": 2}
    assert (await destination.list_resource_ids(per_page=False)).items == LISTED
    for rid in WITH_RECORDS:
        assert await destination.get_resource(rid) == await source.get_resource(rid), rid
    assert await summarize(destination) == await summarize(source)
    again = await copy_store(source, destination, page_size=3)
    assert again.verified and again.imported.written == {"resources": 0, "threads": 0, "messages": 0}


@pytest.mark.parametrize("kind", ["sqlite", "valkey"])
async def test_export_of_one_absent_resource_is_valid_and_empty(kind: str, new_store: NewStore) -> None:
    source = await new_store(kind)
    await _seed(source)
    for absent in ("nobody", "erased"):
        records = [json.loads(line) async for line in export_lines(source, absent)]
        assert [r["kind"] for r in records] == ["header", "trailer"]
        assert records[-1]["counts"] == {"resources": 0, "threads": 0, "messages": 0}
    records = [json.loads(line) async for line in export_lines(source, "emptied")]
    assert [r["kind"] for r in records] == ["header", "resource", "trailer"]
