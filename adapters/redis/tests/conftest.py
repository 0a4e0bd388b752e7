"""Fixtures for the Redis adapter's tests: real servers, fresh namespaces.

Servers (session scope, started on first use, stopped at session end):
``redis_standalone`` (one valkey-server), ``redis_cluster`` (three
cluster-enabled valkey-servers). ``redis_target`` runs a test once per
target: ``valkey``, ``cluster`` and, only when ``REDIS_URL`` is set (CI's
Redis 7), ``env``.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from memory_core.clock import Clock

from memory_core_redis import RedisStorage
from memory_core_redis.testing import Server, start_cluster, start_standalone

TARGETS = ["valkey", "cluster", *(["env"] if os.environ.get("REDIS_URL") else [])]
"""Where adapter tests run: REDIS_URL's server only when it is set."""


@pytest.fixture
def anyio_backend() -> str:
    """Async tests run on asyncio."""
    return "asyncio"


@pytest.fixture(scope="session")
def standalone_server() -> Iterator[Server]:
    """A standalone valkey-server (no persistence) on a free loopback port
    and a unix socket."""
    server = start_standalone()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def redis_standalone(standalone_server: Server) -> str:
    """``redis://`` URL of the standalone server."""
    return str(standalone_server.url)


@pytest.fixture(scope="session")
def redis_unix_socket(standalone_server: Server) -> str:
    """Path of the standalone server's unix socket."""
    return str(standalone_server.socket)


@pytest.fixture(scope="session")
def redis_cluster() -> Iterator[str]:
    """``redis+cluster://`` URL of a three-primary valkey cluster on loopback."""
    server = start_cluster()
    try:
        yield server.url
    finally:
        server.stop()


@pytest.fixture(params=TARGETS)
def redis_target(request: pytest.FixtureRequest) -> str:
    """The URL of one target server (parametrised over TARGETS)."""
    if request.param == "valkey":
        return str(request.getfixturevalue("redis_standalone"))
    if request.param == "cluster":
        return str(request.getfixturevalue("redis_cluster"))
    return os.environ["REDIS_URL"]


def new_namespace() -> str:
    """A fresh, unique key prefix."""
    return f"mc-test-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def make_store(redis_target: str) -> Callable[..., RedisStorage]:
    """``make_store(clock=None, namespace=None, **options)``: a new store (no
    I/O) on the target, in a fresh namespace unless one is given; options go
    to ``RedisStorage.from_url``."""

    def factory(clock: Clock | None = None, namespace: str | None = None, **options: Any) -> RedisStorage:
        return RedisStorage.from_url(redis_target, clock=clock, namespace=namespace or new_namespace(), **options)

    return factory
