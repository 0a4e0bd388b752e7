"""Fixtures for the Qdrant vector store's tests.

Every behaviour test runs on each mode (fixture param):

- ``edge-memory``: Qdrant's engine in-process, ``qdrant::memory:``;
- ``edge-path``: the same engine persisted in a temporary directory,
  ``qdrant+path:///...``;
- ``server``: :class:`QdrantServerStore`, the qdrant-client code path: on the
  real Qdrant server at ``QDRANT_URL`` when the variable is set, else on
  qdrant-client's local mode (``AsyncQdrantClient(location=":memory:")``),
  which speaks the same client API, so the server path runs everywhere.

Each store gets a fresh namespace and is destroyed afterwards.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from memory_core.vector import BaseVectorStore
from qdrant_client import AsyncQdrantClient

from memory_core_qdrant import QdrantServerStore, from_url

MODES = ["edge-memory", "edge-path", "server"]

StoreFactory = Callable[..., BaseVectorStore]


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

    def factory(**options: Any) -> BaseVectorStore:
        options.setdefault("namespace", unique_namespace())
        if mode == "edge-memory":
            return from_url("qdrant::memory:", **options)
        if mode == "edge-path":
            return from_url(f"qdrant+path:///{tmp_path / 'vectors'}", **options)
        url = server_url()
        if url is None:
            # through from_url, as a user builds it; the client is the local mode's
            return QdrantServerStore.from_url("qdrant://127.0.0.1:6333", client=local_client, **options)
        return from_url(url, **options)

    return factory


def server_url() -> str | None:
    """``QDRANT_URL`` as a ``qdrant`` URL (a bare ``host:port`` or an
    ``http(s)://`` URL is accepted), or None when it is not set."""
    url = os.environ.get("QDRANT_URL")
    if not url:
        return None
    if "://" not in url:
        return f"qdrant://{url}"
    if url.startswith(("http://", "https://")):
        return f"qdrant+{url}"
    return url


@pytest.fixture
async def store(store_factory: StoreFactory) -> AsyncIterator[BaseVectorStore]:
    """An opened store in a fresh namespace, destroyed after the test."""
    vectors = store_factory()
    await vectors.open()
    try:
        yield vectors
    finally:
        if not vectors.closed:
            await vectors.destroy()
