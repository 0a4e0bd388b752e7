"""Round trips SQLite -> Redis (valkey) -> MongoDB (secantusdb) -> SQLite,
verified equal at every hop: generated stores, and the LoCoMo data when present."""

from __future__ import annotations

from typing import Any

import pytest

from memory_core import Storage, lineage
from memory_core.models import Message, Thread
from memory_core.transfer import copy_store, summarize
from tests.locomo_data import LOCOMO, needs_locomo
from tests.transfer.conftest import NewStore
from tests.transfer.stores import fill, snapshot

pytestmark = pytest.mark.anyio

HOPS = ["sqlite", "valkey", "secantus", "sqlite"]


async def _hops(first: Storage, new_store: NewStore, page_size: int = 37, batch_size: int = 29) -> None:
    expected = await snapshot(first)
    trailer = await summarize(first)
    source = first
    for kind in HOPS[1:]:
        destination = await new_store(kind)
        report = await copy_store(source, destination, page_size=page_size, batch_size=batch_size)
        assert report.verified, f"{kind}: {report.difference}"
        assert report.imported.written["messages"] == trailer["counts"]["messages"]
        assert await snapshot(destination) == expected, kind
        assert await summarize(destination) == trailer, kind
        source = destination


@pytest.mark.parametrize("seed", [1, 2])
async def test_generated_store_round_trip(seed: int, new_store: NewStore) -> None:
    first = await new_store("sqlite")
    await fill(first, seed)
    await _hops(first, new_store)


@pytest.mark.heavy  # 5,882 messages through secantusdb: run first (root conftest.py)
@needs_locomo
async def test_locomo_round_trip(new_store: NewStore) -> None:
    from memory_core.cli.locomo import load_dir

    first = await new_store("sqlite")
    for conversation in load_dir(LOCOMO):
        for thread in conversation.threads:
            await first.save_thread(thread)
        await first.save_messages(conversation.messages)
        await first.update_resource(conversation.resource_id, working_memory=f"# {conversation.speakers}")
    assert (await summarize(first))["counts"] == {"resources": 10, "threads": 272, "messages": 5882}
    # Default page and batch sizes: fewer round trips to secantusdb, which writes slowly.
    await _hops(first, new_store, page_size=1000, batch_size=500)


async def test_lineage_survives_copies_between_backends(new_store: NewStore) -> None:
    """R-LINEAGE across export/import (``copy_store``): a clone into another
    resource and a branch keep their lineage record, their source, the
    source's clones (paged) and the chain to the root on every backend."""
    first = await new_store("sqlite")
    await first.save_thread(Thread("t1", "r1", "plan"))
    await first.save_messages([Message(f"m{i}", "t1", "user", f"m{i} text") for i in range(3)])
    await lineage.clone_thread(first, "t1", "c1", resource_id="r2", source_resource_id="r1")
    await lineage.branch_thread(first, "t1", "m1", "b1")
    await lineage.clone_thread(first, "b1", "b2", message_limit=1)
    await lineage.clone_thread(first, "t1", "c2", message_limit=2)

    async def tree(store: Storage) -> tuple[Any, ...]:
        clones = await lineage.list_clones(store, "t1", "r1", per_page=1)
        assert clones.next_cursor is not None
        rest = await lineage.list_clones(store, "t1", "r1", per_page=1, cursor=clones.next_cursor)
        assert rest.next_cursor is None
        return (
            [await lineage.get_lineage(store, tid) for tid in ("t1", "c1", "b1", "b2", "c2")],
            [t.id for t in [*clones.items, *rest.items]],
            [t.id for t in (await lineage.list_clones(store, "t1", "r2")).items],
            [t.id for t in await lineage.clone_history(store, "b2")],
            await lineage.source_thread(store, "c1", "r2"),
        )

    expected = await tree(first)
    assert sorted(expected[1]) == ["b1", "c2"] and expected[2:4] == (["c1"], ["t1", "b1", "b2"])
    source = first
    for kind in ("valkey", "secantus", "postgres"):
        destination = await new_store(kind)
        assert (await copy_store(source, destination)).verified, kind
        assert await tree(destination) == expected, kind
        source = destination
