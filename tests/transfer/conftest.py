"""Servers for the transfer tests: one valkey, one secantusdb and one
PostgreSQL per session (``REDIS_URL``/``MONGODB_URL``/``POSTGRES_URL``
replace them), and ``new_store(kind)`` for
fresh, empty stores in unique namespaces, destroyed afterwards."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from memory_core import Storage, connect

NewStore = Callable[[str], Awaitable[Storage]]


@pytest.fixture
async def new_store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[NewStore]:
    """``await new_store("sqlite" | "valkey" | "secantus" | "postgres" | "memory")``."""
    opened: list[Storage] = []

    async def new(kind: str) -> Storage:
        fresh = f"t{uuid.uuid4().hex[:16]}"
        if kind == "sqlite":
            store = await connect(f"sqlite:///{tmp_path / fresh}.db")
        elif kind == "valkey":
            store = await connect(request.getfixturevalue("valkey_url"), namespace=fresh)
        elif kind == "secantus":
            store = await connect(request.getfixturevalue("secantus_url"), namespace=fresh)
        elif kind == "postgres":
            store = await connect(request.getfixturevalue("postgres_url"), namespace=fresh)
        else:
            store = await connect("memory://")
        opened.append(store)
        return store

    yield new
    for store in opened:
        await store.destroy()
