"""Fixtures for the Qdrant vector store's tests.

Every behaviour test runs on each mode (fixture param):

- ``edge-memory``: Qdrant's engine in-process, ``qdrant::memory:``;
- ``edge-path``: the same engine persisted in a temporary directory,
  ``qdrant+path:///...``;
- ``client-local``: :class:`QdrantServerStore` over qdrant-client's own local
  mode (``AsyncQdrantClient(location=":memory:")``), which exercises the server
  code path without a server;
- ``server``: a real Qdrant server at ``QDRANT_URL``; skipped (with the
  reason) when the variable is not set.

Each store gets a fresh namespace and is destroyed afterwards.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from qdrant_client import AsyncQdrantClient

from memory_core_qdrant import QdrantServerStore, QdrantVectorStore

MODES = ["edge-memory", "edge-path", "client-local", "server"]

StoreFactory = Callable[..., QdrantVectorStore]


@pytest.fixture
def anyio_backend() -> str:
    """Async tests run on asyncio."""
    return "asyncio"


def unique_namespace() -> str:
    """A fresh collection prefix for one store."""
    return f"t{uuid.uuid4().hex[:12]}"


@pytest.fixture(params=MODES)
def mode(request: pytest.FixtureRequest) -> str:
    """Which engine the test runs on."""
    if request.param == "server" and not os.environ.get("QDRANT_URL"):
        pytest.skip("QDRANT_URL is not set: no Qdrant server to test against")
    return str(request.param)


@pytest.fixture
async def local_client() -> AsyncIterator[AsyncQdrantClient]:
    """qdrant-client's local mode, in memory (one per test)."""
    client = AsyncQdrantClient(location=":memory:")
    yield client
    await client.close()


@pytest.fixture
def store_factory(mode: str, tmp_path: Path, local_client: AsyncQdrantClient) -> StoreFactory:
    """``factory(namespace=<fresh>, **options)`` -> an unopened store of ``mode``;
    stores of one test share one location (directory, client or server)."""

    def factory(**options: Any) -> QdrantVectorStore:
        options.setdefault("namespace", unique_namespace())
        if mode == "edge-memory":
            return QdrantVectorStore.from_url("qdrant::memory:", **options)
        if mode == "edge-path":
            return QdrantVectorStore.from_url(f"qdrant+path:///{tmp_path / 'vectors'}", **options)
        if mode == "client-local":
            return QdrantServerStore(client=local_client, **options)
        url = os.environ["QDRANT_URL"]
        if "://" not in url:
            url = f"qdrant://{url}"
        elif url.startswith(("http://", "https://")):
            url = f"qdrant+{url}"
        return QdrantVectorStore.from_url(url, **options)

    return factory


@pytest.fixture
async def store(store_factory: StoreFactory) -> AsyncIterator[QdrantVectorStore]:
    """An opened store in a fresh namespace, destroyed after the test."""
    vectors = store_factory()
    await vectors.open()
    try:
        yield vectors
    finally:
        if not vectors._closed:
            await vectors.destroy()
