"""Fixtures for the MongoDB adapter's tests.

Servers: a ``secantusdb`` server started once per session on a free loopback
port with in-memory storage (stopped at the end), and, only when
``MONGODB_URL`` is set, that server too: every server-backed test runs once
per server (fixture param ``secantus`` / ``env``). Every store lives in its
own fresh database (a unique ``namespace``) and is destroyed afterwards.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import pytest
from memory_core_mongodb import MongoStorage
from memory_core_mongodb.testing import secantus_server, unique_namespace
from pymongo import AsyncMongoClient

from memory_core.clock import Clock

SERVERS = ["secantus", *(["env"] if os.environ.get("MONGODB_URL") else [])]

StoreFactory = Callable[..., MongoStorage]


@pytest.fixture
def anyio_backend() -> str:
    """Async tests run on asyncio."""
    return "asyncio"


@pytest.fixture(scope="session")
def secantus_url() -> Iterator[str]:
    """URL of this session's secantusdb server."""
    with secantus_server() as url:
        yield url


@pytest.fixture(scope="session", params=SERVERS)
def mongodb_url(request: pytest.FixtureRequest) -> str:
    """URL of the server under test: secantusdb, or MONGODB_URL when set."""
    if request.param == "env":
        return os.environ["MONGODB_URL"]
    return str(request.getfixturevalue("secantus_url"))


@pytest.fixture
def is_secantus(mongodb_url: str, secantus_url: str) -> bool:
    """Whether the server under test is the session's secantusdb."""
    return mongodb_url == secantus_url


@pytest.fixture
def store_factory(mongodb_url: str) -> StoreFactory:
    """``factory(clock=None, **options)`` -> an unopened MongoStorage in a fresh namespace."""

    def factory(clock: Clock | None = None, **options: Any) -> MongoStorage:
        options.setdefault("namespace", unique_namespace())
        options.setdefault("serverSelectionTimeoutMS", 10_000)
        return MongoStorage.from_url(mongodb_url, clock=clock, **options)

    return factory


@pytest.fixture
async def store(store_factory: StoreFactory) -> AsyncIterator[MongoStorage]:
    """An opened store in a fresh namespace, destroyed after the test."""
    storage = store_factory()
    await storage.open()
    try:
        yield storage
    finally:
        if not storage._closed:
            await storage.destroy()


@pytest.fixture
async def raw_client(mongodb_url: str) -> AsyncIterator[AsyncMongoClient[dict[str, Any]]]:
    """A plain PyMongo client on the server under test (for looking at stored documents)."""
    client: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(mongodb_url, serverSelectionTimeoutMS=10_000)
    try:
        yield client
    finally:
        await client.close()
