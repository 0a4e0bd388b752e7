"""Tests of optional capabilities (``test_cap_*``): each capability's own
tests run only when it is declared; its probe (``test_cap_*_probed_*``) runs
only when it is not, and reports what it saw (see
:mod:`memory_core_conformance.undeclared`)."""

from __future__ import annotations

from functools import partial

import anyio
import pytest

from memory_core.capabilities import Capability
from memory_core.clock import ManualClock
from memory_core.errors import ValidationError
from memory_core.models import Resource, ThreadFilter
from memory_core_conformance.cases._base import SuiteBase, ids, requires
from memory_core_conformance.compare import assert_same
from memory_core_conformance.harness import (
    T0,
    StorageFactory,
    StorageReopener,
    at,
    capabilities_of,
    message,
    snapshot,
    thread,
)
from memory_core_conformance.probes import PROBES, ProbeResult
from memory_core_conformance.undeclared import PROBE_PROPERTY

__all__ = ["CapabilityCases"]


async def _probe_undeclared(capability: Capability, request: pytest.FixtureRequest, factory: StorageFactory) -> None:
    """Probe an undeclared ``capability`` (:data:`~memory_core_conformance.probes.PROBES`),
    record the finding as the :data:`~memory_core_conformance.undeclared.PROBE_PROPERTY`
    user property and skip with it as the reason: the finding is advice, never
    a failure. A declared capability is skipped at once (its own tests check
    it).

    Raises:
        The probe's error when the first store fails to open or save (that
        is a failure of the store, not a sign of a missing capability).
    """
    if capability in capabilities_of(factory):
        pytest.skip(f"capability {capability.value!r} declared: its own tests check it")
    try:
        reopener = request.getfixturevalue("storage_reopener")
    except NotImplementedError:
        result = ProbeResult(capability, None, "the test class defines no storage_reopener fixture")
    else:
        result = await PROBES[capability](factory, reopener)
    request.node.user_properties.append((PROBE_PROPERTY, (capability.value, result.seems_present, result.evidence)))
    verdict = {True: "seems present, declare it", False: "no sign of it", None: "not probed"}[result.seems_present]
    pytest.skip(f"capability {capability.value!r} undeclared; probe: {verdict} ({result.evidence})")


class CapabilityCases(SuiteBase):
    """PERSISTENT and SHARED_NAMESPACE, and their probes."""

    async def test_cap_persistent_probed_when_undeclared(
        self, request: pytest.FixtureRequest, storage_factory: StorageFactory
    ) -> None:
        await _probe_undeclared(Capability.PERSISTENT, request, storage_factory)

    async def test_cap_shared_namespace_probed_when_undeclared(
        self, request: pytest.FixtureRequest, storage_factory: StorageFactory
    ) -> None:
        await _probe_undeclared(Capability.SHARED_NAMESPACE, request, storage_factory)

    @requires(Capability.PERSISTENT)
    async def test_cap_persistent_data_survives_reopen(
        self, storage_factory: StorageFactory, storage_reopener: StorageReopener
    ) -> None:
        clock = ManualClock(T0)
        first = storage_factory(clock)
        await first.open()
        second = None
        try:
            await first.save_thread(thread("t1", title="🧵", metadata={"f": 1.0, "i": 1, "b": True}))
            await first.save_messages([message(f"m{i}", created_at=at(0)) for i in range(5)])
            await first.update_resource("r1", working_memory="wm", metadata={"k": None})
            before = await snapshot(first, ["r1"])
            await first.close()
            second = storage_reopener(first, clock)
            await second.open()
            assert_same(
                await snapshot(second, ["r1"]),
                before,
                "everything read after reopening",
                sides=("reopened store", "store before closing"),
            )
            await second.save_messages([message("late", created_at=at(0))])
            page = await second.list_messages("t1", per_page=False)
            assert ids(page) == ["m0", "m1", "m2", "m3", "m4", "late"], "R-ORDER sequence must continue after reopen"
        finally:
            if second is not None:
                await second.destroy()
            else:
                await first.destroy()

    @requires(Capability.PERSISTENT)
    async def test_cap_persistent_strict_preflight_reads_unopened_and_refuses_an_empty_namespace(
        self, storage_factory: StorageFactory, storage_reopener: StorageReopener
    ) -> None:
        """``preflight(must_exist=True)`` (``export``, ``copy``'s source,
        ``prune``) on a store never opened: a namespace holding no store is
        refused as a ``ValidationError`` naming the URL part and the store as
        the user spelt it, creating nothing there (an ``open`` afterwards
        finds an empty store); one that holds a store passes, read without
        opening."""
        empty = storage_factory(None)
        assert type(empty).__name__ in repr(empty)
        with pytest.raises(ValidationError) as refused:
            await empty.preflight(must_exist=True)
        assert "check" in str(refused.value), f"the refusal names the next step: {refused.value}"
        await empty.open()
        try:
            assert (await empty.list_threads()).total == 0
            await empty.save_thread(thread("t1"))
            await empty.close()
            again = storage_reopener(empty, None)
            try:
                await again.preflight(must_exist=True)
                assert await again.get_thread("t1") is not None
            finally:
                await again.close()
        finally:
            await storage_reopener(empty, None).destroy()

    @requires(Capability.PERSISTENT)
    async def test_cap_persistent_destroy_leaves_nothing(
        self, storage_factory: StorageFactory, storage_reopener: StorageReopener
    ) -> None:
        first = storage_factory(None)
        await first.open()
        await first.save_thread(thread("t1"))
        await first.save_messages([message("m1")])
        await first.save_resource(Resource("r1", "x"))
        await first.destroy()
        second = storage_reopener(first, None)
        await second.open()
        try:
            assert (await second.list_threads()).total == 0
            assert await second.get_messages(["m1"]) == []
            assert await second.get_resource("r1") is None
        finally:
            await second.destroy()

    @requires(Capability.SHARED_NAMESPACE)
    async def test_cap_shared_namespace_instances_see_each_others_writes(
        self, storage_factory: StorageFactory, storage_reopener: StorageReopener
    ) -> None:
        clock = ManualClock(T0)
        first = storage_factory(clock)
        second = storage_reopener(first, clock)
        await first.open()
        await second.open()
        try:
            await first.save_thread(thread("t1"))
            await second.save_messages([message("a", created_at=at(0))])
            await first.save_messages([message("b", created_at=at(0))])
            await second.update_thread("t1", metadata={"x": 1})
            for store in (first, second):
                assert ids(await store.list_messages("t1")) == ["a", "b"]
                got = await store.get_thread("t1")
                assert got is not None and got.metadata == {"x": 1}
            async with anyio.create_task_group() as group:
                for i in range(10):
                    group.start_soon(partial(first.update_thread, "t1", metadata={f"a{i}": i}))
                    group.start_soon(partial(second.update_thread, "t1", metadata={f"b{i}": i}))
            got = await first.get_thread("t1")
            assert got is not None and len(got.metadata) == 21
            assert (await second.list_threads(ThreadFilter(resource_id="r1"))).total == 1
        finally:
            await second.close()
            await first.destroy()

    @requires(Capability.SHARED_NAMESPACE)
    async def test_cap_shared_namespace_a_thread_recreated_elsewhere_by_another_instance_is_seen(
        self, storage_factory: StorageFactory, storage_reopener: StorageReopener
    ) -> None:
        """An instance that has read a thread (and may remember where it
        lives) sees it, and its messages, under the resource another instance
        re-created it in after deleting it: a resource ordered before the old
        one, then one after."""
        clock = ManualClock(T0)
        first = storage_factory(clock)
        second = storage_reopener(first, clock)
        await first.open()
        await second.open()
        try:
            await first.save_thread(thread("t1", "r1"))
            await first.save_messages([message("m1", created_at=at(0))])
            for rid in ("r0", "r2"):
                assert await first.get_thread("t1") is not None
                assert ids(await first.list_messages("t1")) == ["m1"]
                await second.delete_thread("t1")
                await second.save_thread(thread("t1", rid, title=rid))
                await second.save_messages([message("m1", created_at=at(1), content=rid)])
                got = await first.get_thread("t1")
                assert got is not None and (got.resource_id, got.title) == (rid, rid), (
                    f"after another instance re-created t1 under {rid!r}, this one reads {got!r}"
                )
                page = await first.list_messages("t1")
                assert [(m.id, m.resource_id, m.content) for m in page.items] == [("m1", rid, rid)]
        finally:
            await second.close()
            await first.destroy()
