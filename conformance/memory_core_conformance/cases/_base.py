"""Fixtures every case mixin shares; the adapter's subclass overrides one."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, ClassVar

import pytest

from memory_core.capabilities import Capability
from memory_core.clock import Clock, ManualClock
from memory_core.errors import ValidationError
from memory_core.models import Message, Thread
from memory_core.reference import InMemoryStorage
from memory_core.storage import BaseStorage
from memory_core_conformance.compare import describe_difference
from memory_core_conformance.harness import (
    T0,
    FollowerClock,
    StorageFactory,
    StorageReopener,
    capabilities_of,
    open_store,
    snapshot,
)
from memory_core_conformance.undeclared import skip_reason

__all__ = ["SuiteBase", "ids", "paired_stores", "requires", "unchanged_after"]


def requires(capability: Capability) -> pytest.MarkDecorator:
    """Mark a test as needing an optional capability (skipped when the
    adapter does not declare it)."""
    return pytest.mark.conformance_capability(capability.value)


def ids(items: list[Message] | list[Thread] | Any) -> list[str]:
    """The ids of a list of records (or of a Page's items), in order."""
    found = items.items if hasattr(items, "items") and not isinstance(items, list) else items
    return [item.id for item in found]


async def unchanged_after(
    store: BaseStorage,
    call: Callable[[], Awaitable[Any]],
    error: type[BaseException] = ValidationError,
    *,
    resource_ids: tuple[str, ...] = ("r1", "r2"),
) -> BaseException:
    """Run ``call``, require it to raise ``error``, and require that the store's
    whole state (threads, messages, the named resources) did not change.

    Returns:
        The raised exception (to check its message).
    """
    before = await snapshot(store, resource_ids)
    with pytest.raises(error) as raised:
        await call()
    after = await snapshot(store, resource_ids)
    changes = describe_difference(after, before, ("after", "before"), root="store")
    assert not changes, "a rejected call changed the store:\n" + "\n".join(f"  {line}" for line in changes)
    return raised.value


@asynccontextmanager
async def paired_stores(
    factory: StorageFactory, leader: Clock | None = None
) -> AsyncIterator[tuple[BaseStorage, BaseStorage, ManualClock]]:
    """The adapter's store and a reference store side by side, both following
    one :class:`~memory_core.clock.ManualClock` (so their times agree).

    Yields:
        ``(adapter_store, reference_store, leader_clock)``; both are destroyed
        afterwards.
    """
    clock = leader if isinstance(leader, ManualClock) else ManualClock(T0)
    async with open_store(factory, FollowerClock(clock)) as sut:
        reference = InMemoryStorage(clock=FollowerClock(clock))
        await reference.open()
        try:
            yield sut, reference, clock
        finally:
            await reference.destroy()


class SuiteBase:
    """Fixtures of the suite. Adapter authors override ``storage_factory``
    (and ``storage_reopener`` when they declare a capability that needs it)."""

    pytestmark: ClassVar[list[pytest.MarkDecorator]] = [pytest.mark.conformance, pytest.mark.anyio]

    @pytest.fixture
    def storage_factory(self) -> StorageFactory:
        """Override: return ``factory(clock=None) -> BaseStorage`` (construct
        only, fresh empty namespace)."""
        raise NotImplementedError(
            f"{type(self).__name__} must define the fixture storage_factory: "
            "a function factory(clock=None) returning a new, unopened store in a fresh namespace"
        )

    @pytest.fixture
    def storage_reopener(self) -> StorageReopener:
        """Override when declaring PERSISTENT or SHARED_NAMESPACE: return
        ``reopen(store, clock=None) -> BaseStorage``, a new unopened instance
        on the namespace of ``store`` (a store ``storage_factory`` built); see
        :class:`~memory_core_conformance.harness.StorageReopener`."""
        raise NotImplementedError(
            f"{type(self).__name__} declares a capability that needs a second instance on one namespace: "
            "define the fixture storage_reopener returning reopen(store, clock=None), where store is a store "
            "your storage_factory built and the result is a new, unopened instance on the same namespace "
            "(example: memory_core_conformance.examples.toyfile_conformance)"
        )

    @pytest.fixture
    def anyio_backend(self) -> str:
        """Adapters run on asyncio (their drivers do)."""
        return "asyncio"

    @pytest.fixture
    def clock(self) -> ManualClock:
        """The injected clock of ``store``, standing at ``T0`` (2025-01-01Z)."""
        return ManualClock(T0)

    @pytest.fixture
    async def store(self, storage_factory: StorageFactory, clock: ManualClock) -> AsyncIterator[BaseStorage]:
        """An opened store on ``clock``, destroyed after the test."""
        async with open_store(storage_factory, clock) as opened:
            yield opened

    @pytest.fixture(autouse=True)
    def _conformance_capability_gate(self, request: pytest.FixtureRequest, storage_factory: StorageFactory) -> None:
        """Skip a test whose capability the adapter does not declare."""
        marker = request.node.get_closest_marker("conformance_capability")
        if marker is None:
            return
        needed = Capability(marker.args[0])
        if needed not in capabilities_of(storage_factory):
            pytest.skip(skip_reason(needed))
