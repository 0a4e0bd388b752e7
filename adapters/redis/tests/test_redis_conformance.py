"""The shared conformance suite against the Redis adapter: standalone
valkey, a three-node valkey cluster, and REDIS_URL's server when set (the
``redis_target`` fixture parametrises over them)."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import pytest
from memory_core.clock import Clock
from memory_core.testing import free_port
from memory_core_conformance import StorageConformance
from memory_core_conformance.cases.faults import ResourceCounter
from memory_core_conformance.processes import StoreAddress
from redis.asyncio import Redis

from memory_core_redis import RedisStorage


class TestRedisConformance(StorageConformance):
    """Every conformance test, once per target server."""

    @pytest.fixture
    def storage_factory(self, redis_target: str) -> Callable[..., RedisStorage]:
        """A new store (no I/O) in a fresh key prefix on the target."""

        def factory(clock: Clock | None = None) -> RedisStorage:
            return RedisStorage.from_url(redis_target, clock=clock, namespace=f"conf-{uuid.uuid4().hex}")

        return factory

    @pytest.fixture
    def storage_reopener(self, redis_target: str) -> Callable[..., RedisStorage]:
        """A second store on the same key prefix as ``store``."""

        def reopen(store: RedisStorage, clock: Clock | None = None) -> RedisStorage:
            return RedisStorage.from_url(redis_target, clock=clock, namespace=store.prefix)

        return reopen

    @pytest.fixture
    def storage_address(self, redis_target: str) -> Callable[[RedisStorage], StoreAddress]:
        """Where a child process opens a second store on the same key prefix as ``store``."""

        def address(store: RedisStorage) -> StoreAddress:
            return StoreAddress(RedisStorage.from_url, (redis_target,), {"namespace": store.prefix})

        return address

    @pytest.fixture
    def elsewhere_storage_reopener(
        self, redis_target: str, request: pytest.FixtureRequest
    ) -> Callable[..., RedisStorage] | None:
        """A store on the other test server (the cluster for the standalone
        server and back) with ``store``'s key prefix; none for REDIS_URL's."""
        other = {"redis_standalone": "redis_cluster", "redis_cluster": "redis_standalone"}
        here = next((name for name in other if request.getfixturevalue(name) == redis_target), None)
        if here is None:
            return None
        elsewhere = str(request.getfixturevalue(other[here]))

        def reopen(store: RedisStorage, clock: Clock | None = None) -> RedisStorage:
            return RedisStorage.from_url(elsewhere, clock=clock, namespace=store.prefix)

        return reopen

    @pytest.fixture
    def options_storage_factory(self, redis_target: str) -> Callable[[dict[str, Any]], RedisStorage]:
        """A new store (no I/O) on the target with extra keyword options."""

        def factory(options: dict[str, Any]) -> RedisStorage:
            return RedisStorage.from_url(redis_target, namespace=f"conf-{uuid.uuid4().hex}", **options)

        return factory

    @pytest.fixture
    def unopenable_storage_factory(self, redis_target: str) -> Callable[..., RedisStorage]:
        """Stores of the target's kind (standalone or cluster) on a loopback
        port where no server listens: their open fails."""

        def factory(clock: Clock | None = None) -> RedisStorage:
            dead = urlsplit(redis_target)._replace(netloc=f"127.0.0.1:{free_port()}").geturl()
            return RedisStorage.from_url(dead, clock=clock, namespace=f"conf-{uuid.uuid4().hex}")

        return factory

    @pytest.fixture
    def resource_counter(self, redis_target: str) -> ResourceCounter:
        """Client connections on every server of the target (``CLIENT LIST``
        on each node of a cluster), the counting connections left out."""
        cluster = redis_target.startswith("redis+cluster")

        async def clients(url: str) -> int:
            client = Redis.from_url(url)
            try:
                return len(await client.client_list()) - 1
            finally:
                await client.aclose()

        async def count() -> int:
            if not cluster:
                return await clients(redis_target)
            first = Redis.from_url(redis_target.replace("redis+cluster", "redis", 1))
            try:
                nodes = (await first.execute_command("CLUSTER", "NODES")).decode()  # type: ignore[no-untyped-call]
            finally:
                await first.aclose()
            addresses = [line.split()[1].split("@")[0] for line in nodes.splitlines() if line.strip()]
            return sum([await clients(f"redis://{address}") for address in addresses])

        return count
