"""Round trips SQLite -> Redis (valkey) -> MongoDB (secantusdb) -> SQLite,
verified equal at every hop: generated stores, and the LoCoMo data when present."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from memory_core import Storage
from memory_core.transfer import copy_store, summarize
from tests.transfer.conftest import NewStore
from tests.transfer.stores import fill, snapshot

pytestmark = pytest.mark.anyio

HOPS = ["sqlite", "valkey", "secantus", "sqlite"]
LOCOMO = Path(os.environ.get("MEMORY_CORE_LOCOMO", Path(__file__).resolve().parents[3] / "shared/data/locomo10"))


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
@pytest.mark.skipif(not LOCOMO.is_dir(), reason=f"LoCoMo data not found at {LOCOMO} (set MEMORY_CORE_LOCOMO)")
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
