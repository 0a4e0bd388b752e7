"""Fixtures for the PostgreSQL adapter's tests: real servers, fresh schemas.

``pg_server`` (session scope) is PostgreSQL 16 + pgvector from ``pgserver``,
started by :func:`memory_core_postgres.testing.start_postgres` on a free
loopback port at first use and stopped at session end. ``pg_target`` runs a
test once per target: ``pgserver`` and, only when ``POSTGRES_URL`` is set
(e.g. the machine's PostgreSQL 15 without pgvector), ``env``; ``vector_url``
is the target's URL for pgvector (skipped where it has none). Every store
lives in its own schema (``namespace``) and is dropped by ``destroy()``.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import asyncpg
import pytest
from memory_core.clock import Clock

from memory_core_postgres import PostgresStorage
from memory_core_postgres.testing import PostgresServer, start_postgres

TARGETS = ["pgserver", *(["env"] if os.environ.get("POSTGRES_URL") else [])]
"""Where adapter tests run: POSTGRES_URL's server only when it is set."""


@pytest.fixture
def anyio_backend() -> str:
    """Async tests run on asyncio."""
    return "asyncio"


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PostgresServer]:
    """PostgreSQL 16 + pgvector on a free loopback port, for the whole session."""
    server = start_postgres()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def pg_url(pg_server: PostgresServer) -> str:
    """``postgresql://`` URL of the session's pgserver."""
    return pg_server.url


@pytest.fixture(params=TARGETS)
def pg_target(request: pytest.FixtureRequest) -> str:
    """The URL of one target server (parametrised over TARGETS)."""
    if request.param == "pgserver":
        return str(request.getfixturevalue("pg_url"))
    return os.environ["POSTGRES_URL"]


async def _has_pgvector(url: str) -> bool:
    conn = await asyncpg.connect(url)
    try:
        return bool(await conn.fetchval("SELECT count(*) FROM pg_available_extensions WHERE name = 'vector'"))
    finally:
        await conn.close()


@pytest.fixture
def vector_url(pg_target: str) -> str:
    """The target's URL for pgvector; skips a server without pgvector, saying so."""
    if not asyncio.run(_has_pgvector(pg_target)):
        where = "POSTGRES_URL" if pg_target == os.environ.get("POSTGRES_URL") else pg_target
        pytest.skip(f"the server at {where} has no pgvector extension")
    return pg_target


def new_namespace() -> str:
    """A fresh, unique schema suffix."""
    return f"t{uuid.uuid4().hex[:16]}"


@pytest.fixture
def make_store(pg_target: str) -> Callable[..., PostgresStorage]:
    """``make_store(clock=None, namespace=None, **options)``: a new store (no
    I/O) on the target, in a fresh schema unless a namespace is given."""

    def factory(clock: Clock | None = None, namespace: str | None = None, **options: Any) -> PostgresStorage:
        return PostgresStorage.from_url(pg_target, clock=clock, namespace=namespace or new_namespace(), **options)

    return factory
