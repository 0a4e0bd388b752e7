"""Opens that fail, a store closed before it opened, and one store used from
several threads and event loops (LIFECYCLE).

A failed open must be typed (``BackendError`` naming the backend and the
operation ``open``, or ``ValidationError`` naming the field), must not leave
the store half-open (it neither answers nor remembers being open, and
``close`` still works), and must not spoil the next open of a good store.
The target that cannot be opened is the adapter's to name: the optional
fixture ``unopenable_storage_factory`` (a folder that is a file, a file that
is not a database, a closed port); without it the case is skipped.

A store opened in one event loop must also work from other loops: one
``asyncio.run`` after another (each loop closed after its call, as sync
frameworks call async code), and several threads each running its own loop
at once (the OpenAI Agents SDK's ``SQLiteSession`` allows it). Drivers whose
connections belong to their loop need one connection per loop
(``BaseStorage.loop_bound``). Every such case is bounded in time: a store
that hangs fails the case after :data:`LOOP_CASE_SECONDS` instead of hanging
the suite (its threads are daemons).
"""

from __future__ import annotations

import asyncio
import gc
import threading
import time
import warnings
from collections.abc import Awaitable, Callable, Mapping
from contextlib import suppress
from typing import Any

import pytest

from memory_core.errors import AdapterClosedError, BackendError, ValidationError
from memory_core.identity import same_store
from memory_core.storage import BaseStorage
from memory_core_conformance.cases._base import SuiteBase
from memory_core_conformance.harness import (
    StorageFactory,
    StorageReopener,
    leaked_by_collection,
    message,
    open_store,
    thread,
)

__all__ = [
    "CANCEL_POINTS",
    "LOOP_CASE_SECONDS",
    "LOOP_THREADS",
    "NO_ELSEWHERE_REOPENER",
    "NO_FOREIGN_TARGET",
    "NO_OPTIONS_FACTORY",
    "NO_RELEASE_TARGETS",
    "NOT_OPTION_NAMES",
    "NO_OPTION_EFFECTS",
    "NO_UNOPENABLE_TARGET",
    "OpeningCases",
    "OptionEffects",
    "SettingsProbe",
]

LOOP_THREADS = 5
"""Threads (each with its own event loop) sharing one store at once."""
LOOP_CASE_SECONDS = 30.0
"""Time a threads-and-loops case may take before it counts as a hang."""

CANCEL_POINTS: tuple[int | float, ...] = (0, 1, 2, 3, 5, 8, 13, 0.002, 0.005, 0.01, 0.02, 0.05)
"""Where the cancelled-open case cuts an open: an int is that many turns of
the event loop after it started, a float that many seconds."""

NO_UNOPENABLE_TARGET = (
    "the test class defines no unopenable_storage_factory fixture (stores on a target that cannot be opened)"
)
"""Skip reason of the failed-open case without that fixture."""

NO_FOREIGN_TARGET = (
    "the test class defines no foreign_storage_factory fixture (stores on a target holding no memory-core store)"
)
"""Skip reason of the strict-preflight refusal case without that fixture."""

NO_RELEASE_TARGETS = (
    "the test class defines no release_storage_factory fixture (stores another release's schema version left)"
)
"""Skip reason of the schema-upgrade cases without that fixture."""

NO_OPTIONS_FACTORY = (
    "the test class defines no options_storage_factory fixture (stores built with extra keyword options)"
)
"""Skip reason of the unknown-option case without that fixture."""

NO_ELSEWHERE_REOPENER = (
    "the test class defines no elsewhere_storage_reopener fixture (a store on another target, same namespace)"
)
"""Skip reason of the same-namespace-elsewhere case without that fixture."""

NO_OPTION_EFFECTS = (
    "the test class defines no option_effects fixture (store variants and a probe of the settings in effect)"
)
"""Skip reason of the options-that-must-show case without that fixture."""

SettingsProbe = Callable[[BaseStorage], Awaitable[dict[str, Any]]]
"""``await probe(store) -> settings``: the settings an open store actually
runs with, read from the backend itself (SQLite: ``PRAGMA``s on the store's
own connection; a server: the key prefix or schema its writes went to),
never from the options the store was given."""

OptionEffects = tuple[Mapping[str, tuple[dict[str, Any], dict[str, Any]]], SettingsProbe]
"""``(variants, probe)``: store variants (name -> (extra keyword options
for ``options_storage_factory``, the settings those options must put in
effect)) and the :data:`SettingsProbe` that reads the settings in effect."""

NOT_OPTION_NAMES = ("kwargs", "args", "connection_kwargs", "no_such_option")
"""Keyword names no store or driver option has: catch-all parameters of
driver signatures (an adapter that collects a driver's parameter names must
leave them out) and a made-up one."""


def _assert_typed_open_failure(error: BaseException, store: BaseStorage) -> None:
    """``error`` is a ``BackendError`` of ``store``'s backend and the operation
    ``open``, or a ``ValidationError`` naming a field."""
    if isinstance(error, BackendError):
        assert (error.backend, error.operation) == (store.backend_name, "open"), (
            f"a failed open must name the backend {store.backend_name!r} and the operation 'open': {error!r}"
        )
    else:
        assert isinstance(error, ValidationError) and error.field, f"a failed open must name what is wrong: {error!r}"


async def _use_in_four_loops(store: BaseStorage) -> None:
    """Open ``store``, write, read and destroy it, each under its own
    ``asyncio.run`` (in a thread of its own, :func:`_in_threads`)."""

    async def write() -> None:
        await store.save_thread(thread("t1"))
        await store.save_messages([message("m1")])

    async def read() -> list[str]:
        return [m.id for m in (await store.list_messages("t1", per_page=False)).items]

    try:
        for call in (store.open, write, read, store.destroy):
            results = await _in_threads([call])
            assert not isinstance(results[0], BaseException), f"{call.__name__} in a new loop: {results[0]!r}"
            if call is read:
                assert results == [["m1"]]
    finally:
        with suppress(AdapterClosedError):
            await store.destroy()


async def _cut_off_in_loops(store: BaseStorage) -> None:
    """Start a write of ``store`` under each of a series of ``asyncio.run``
    calls (one after another, in a thread of their own) and return before it
    ends, at each of :data:`CANCEL_POINTS`: ``asyncio.run`` then cancels the
    write, and whatever the store started in that loop, as it ends."""

    writes: list[asyncio.Future[object]] = []  # kept: the loop holds its tasks weakly only

    async def cut_off(index: int, point: int | float) -> None:
        writes.append(asyncio.ensure_future(store.save_messages([message(f"cut{index}")])))
        if isinstance(point, float):
            await asyncio.sleep(point)
        else:
            for _ in range(point):
                await asyncio.sleep(0)

    def run_all() -> None:
        for index, point in enumerate(CANCEL_POINTS):
            asyncio.run(cut_off(index, point))

    await asyncio.wait_for(asyncio.to_thread(run_all), LOOP_CASE_SECONDS)


async def _in_threads(calls: list[Callable[[], Awaitable[object]]]) -> list[object]:
    """Run each call in its own daemon thread under its own ``asyncio.run``,
    all released at once, and return their results (or the exceptions they
    raised), in order. Joins without blocking the caller's loop (the store's
    own loop may be needed meanwhile), and fails the test when a thread is
    still running after :data:`LOOP_CASE_SECONDS`."""
    start = threading.Barrier(len(calls))
    results: list[object] = [None] * len(calls)

    def run(index: int) -> None:
        try:
            start.wait(LOOP_CASE_SECONDS)
            results[index] = asyncio.run(calls[index]())  # type: ignore[arg-type]
        except BaseException as exc:  # reported below, typed or not
            results[index] = exc

    threads = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(len(calls))]
    for worker in threads:
        worker.start()
    deadline = time.monotonic() + LOOP_CASE_SECONDS
    for worker in threads:
        await asyncio.to_thread(worker.join, max(0.0, deadline - time.monotonic()))
    hung = sum(worker.is_alive() for worker in threads)
    assert not hung, f"{hung} of {len(threads)} threads still running after {LOOP_CASE_SECONDS} s: the store hangs"
    return results


class OpeningCases(SuiteBase):
    """Failed opens and early closes."""

    @pytest.fixture
    def unopenable_storage_factory(self) -> StorageFactory | None:
        """Override to run the failed-open case: return ``factory(clock=None)``
        building new, unopened stores whose target cannot be opened (its
        ``open`` raises). Default None: the case is skipped."""
        return None

    @pytest.fixture
    def elsewhere_storage_reopener(self) -> StorageReopener | None:
        """Override to run the same-namespace-elsewhere case: return
        ``reopen(store, clock=None)`` building a new, unopened store with
        ``store``'s namespace on another target (another server, database or
        folder), which the case destroys. Default None: the case is skipped."""
        return None

    async def test_lifecycle_the_same_namespace_on_another_target_is_another_store(
        self, storage_factory: StorageFactory, elsewhere_storage_reopener: StorageReopener | None
    ) -> None:
        """A store with the same namespace on another target holds other data
        and is not the same store (``same_store``: what ``copy`` checks
        before it copies a store onto itself)."""
        if elsewhere_storage_reopener is None:
            pytest.skip(NO_ELSEWHERE_REOPENER)
        async with open_store(storage_factory) as here:
            there = elsewhere_storage_reopener(here, None)
            try:
                assert not same_store(here, there), (
                    f"stores on two targets count as one: {here.store_identity!r} == {there.store_identity!r}"
                )
                await here.save_thread(thread("t1"))
                assert await there.get_thread("t1") is None
            finally:
                await there.destroy()

    @pytest.fixture
    def options_storage_factory(self) -> Callable[[dict[str, Any]], BaseStorage] | None:
        """Override to run the unknown-option case: return ``factory(options)``
        building a new, unopened store on the usual target with ``options``
        as extra keyword options (what a user adds to the adapter's
        constructor or ``from_url``). Default None: the case is skipped."""
        return None

    @pytest.fixture
    def option_effects(self) -> OptionEffects | None:
        """Override to run the options-that-must-show case: return
        :data:`OptionEffects`, ``(variants, probe)``. Each variant's options
        build a store through ``options_storage_factory`` (which the class
        must then define); ``await probe(store)`` on it, open and after a
        write, must equal the variant's settings. Default None: skipped."""
        return None

    async def test_lifecycle_each_option_variant_shows_in_the_settings_in_effect(
        self,
        options_storage_factory: Callable[[dict[str, Any]], BaseStorage] | None,
        option_effects: OptionEffects | None,
    ) -> None:
        """An option the store accepts takes effect: for every variant the
        adapter declares (``option_effects``), the settings read back from
        the backend equal those the options name, defaults included, also
        when a value is a string built at run time (read from a URL or a
        config file: equal, not identical, to the adapter's own constant).
        A configuration with no visible effect (a durability setting
        overridden by a fallback, a prefix or schema left at its default)
        fails here."""
        if option_effects is None:
            pytest.skip(NO_OPTION_EFFECTS)
        if options_storage_factory is None:
            pytest.fail("option_effects builds its variants with options_storage_factory: define that fixture too")
        variants, probe = option_effects
        assert variants, "option_effects declares no variant"
        for name, (options, settings) in variants.items():
            fresh = {key: "".join(list(value)) if isinstance(value, str) else value for key, value in options.items()}
            store = options_storage_factory(fresh)
            try:
                await store.open()
                await store.save_thread(thread("t1"))
                await store.save_messages([message("m1")])
                found = await probe(store)
                assert found == settings, f"variant {name!r} ({options}): settings in effect {found}, want {settings}"
                assert [m.id for m in (await store.list_messages("t1")).items] == ["m1"]
            finally:
                await store.destroy()

    @pytest.mark.parametrize("name", NOT_OPTION_NAMES)
    async def test_lifecycle_an_option_no_store_takes_is_refused_by_name(
        self, options_storage_factory: Callable[[dict[str, Any]], BaseStorage] | None, name: str
    ) -> None:
        """An option no store or driver takes is a ``ValidationError`` naming
        it, raised building the store or at the latest by its ``open``."""
        if options_storage_factory is None:
            pytest.skip(NO_OPTIONS_FACTORY)
        store: BaseStorage | None = None
        try:
            with pytest.raises(ValidationError) as refused:
                store = options_storage_factory({name: 1})
                await store.open()
            assert name in str(refused.value), f"the refusal does not name the option {name!r}: {refused.value}"
        finally:
            if store is not None:
                await store.close()

    async def test_lifecycle_failed_open_is_typed_and_leaves_nothing_half_open(
        self, unopenable_storage_factory: StorageFactory | None, storage_factory: StorageFactory
    ) -> None:
        if unopenable_storage_factory is None:
            pytest.skip(NO_UNOPENABLE_TARGET)
        store = unopenable_storage_factory(None)
        for _ in range(2):  # a failed open is not remembered: the next one tries again and fails alike
            with pytest.raises((BackendError, ValidationError)) as raised:
                await store.open()
            _assert_typed_open_failure(raised.value, store)
        with pytest.raises((BackendError, ValidationError)) as raised:
            await store.get_thread("t1")  # the lazy open fails too: no half-open store answers
        _assert_typed_open_failure(raised.value, store)
        await store.close()
        await store.close()
        with pytest.raises(AdapterClosedError):
            await store.open()
        async with open_store(storage_factory) as good:
            await good.save_thread(thread("t1"))
            assert await good.get_thread("t1") is not None

    @pytest.fixture
    def foreign_storage_factory(self) -> StorageFactory | None:
        """Override to run the strict-preflight refusal case: return
        ``factory(clock=None)`` building new, unopened stores on a target
        that exists and holds another application's data but no memory-core
        store (SQLite: another program's database file; PostgreSQL: a schema
        holding other tables). The fixture prepares and removes that target.
        Default None: the case is skipped."""
        return None

    async def test_lifecycle_strict_preflight_refuses_a_target_holding_no_store(
        self, foreign_storage_factory: StorageFactory | None
    ) -> None:
        """``preflight(must_exist=True)`` refuses a target that exists but
        holds no memory-core store (what a misspelt schema or another
        application's file is) with :func:`~memory_core.storage.no_store`'s
        ``ValidationError``, and again the second time: it created nothing."""
        if foreign_storage_factory is None:
            pytest.skip(NO_FOREIGN_TARGET)
        store = foreign_storage_factory(None)
        try:
            for _ in range(2):
                with pytest.raises(ValidationError, match="holds no memory-core store") as raised:
                    await store.preflight(must_exist=True)
                assert raised.value.field, f"the refusal must name the URL part: {raised.value!r}"
        finally:
            await store.close()

    @pytest.fixture
    def release_storage_factory(self) -> Callable[[int], BaseStorage] | None:
        """Override to run the schema-upgrade cases: return ``factory(step)``
        building a new, unopened store on a fresh target whose schema another
        release of the adapter left: ``step`` -1 the previous schema version
        (every migration but the last applied, no data), +1 one version newer
        than this release knows. The fixture prepares and removes the
        targets. Default None (an adapter without schema versions): skipped."""
        return None

    async def test_lifecycle_a_store_of_the_previous_schema_version_is_upgraded(
        self, request: pytest.FixtureRequest, release_storage_factory: Callable[[int], BaseStorage] | None
    ) -> None:
        """Opening a store the previous release left applies the missing
        migrations (and only those): every operation then works, counted
        totals included, and the next open finds nothing to do."""
        if release_storage_factory is None:
            pytest.skip(NO_RELEASE_TARGETS)
        storage_reopener: StorageReopener = request.getfixturevalue("storage_reopener")  # only with release targets
        store = release_storage_factory(-1)
        try:
            await store.open()
            await store.save_thread(thread("t1"))
            await store.save_messages([message("m1"), message("m2")])
        finally:
            await store.close()
        again = storage_reopener(store, None)
        try:
            await again.save_messages([message("m3")])
            page = await again.list_messages("t1", per_page=1)
            assert ([m.id for m in page.items], page.total) == (["m1"], 3)
            assert (await again.list_messages_by_resource("r1", per_page=0)).total == 3
        finally:
            await again.close()

    async def test_lifecycle_a_store_of_a_newer_schema_version_is_refused(
        self, release_storage_factory: Callable[[int], BaseStorage] | None
    ) -> None:
        """Opening a store a newer release wrote fails typed (BackendError,
        operation ``open``), every time, and leaves nothing half-open."""
        if release_storage_factory is None:
            pytest.skip(NO_RELEASE_TARGETS)
        store = release_storage_factory(1)
        try:
            for _ in range(2):
                with pytest.raises(BackendError) as raised:
                    await store.open()
                _assert_typed_open_failure(raised.value, store)
                assert "newer" in str(raised.value), f"the refusal must say the store is newer: {raised.value!r}"
        finally:
            await store.close()

    async def test_lifecycle_a_store_with_data_passes_the_strict_preflight(
        self, storage_factory: StorageFactory
    ) -> None:
        """``preflight(must_exist=True)``, what ``export``, ``copy``'s source
        and ``prune`` run first, finds an opened store holding data."""
        async with open_store(storage_factory) as store:
            await store.save_thread(thread("t1"))
            await store.save_messages([message("m1")])
            await store.preflight(must_exist=True)
            assert [m.id for m in (await store.list_messages("t1")).items] == ["m1"]

    async def test_lifecycle_preflight_before_the_first_open_leaves_the_store_usable(
        self, storage_factory: StorageFactory
    ) -> None:
        """``preflight()``, what ``check`` and ``import``'s destination run
        first, answers for a new store that was never opened, and the store
        then works as usual."""
        store = storage_factory(None)
        try:
            await store.preflight()
            await store.save_thread(thread("t1"))
            await store.save_messages([message("m1")])
            assert [m.id for m in (await store.list_messages("t1")).items] == ["m1"]
        finally:
            await store.destroy()

    async def test_lifecycle_an_open_cancelled_midway_leaves_nothing_behind(
        self, storage_factory: StorageFactory
    ) -> None:
        """An open cancelled at any point (a request's timeout, a task group
        torn down: :data:`CANCEL_POINTS`) leaves no task running and no
        future or task whose failure nobody retrieved (asyncio logs those
        as "... exception was never retrieved" when they are collected: a
        driver cut mid-connect, asyncpg's TLS negotiation); the store opens
        on its next call."""
        loop = asyncio.get_running_loop()
        gc.collect()  # what earlier tests in this process dropped reports to them, not here
        await asyncio.sleep(0)
        before = asyncio.all_tasks()
        reported: list[dict[str, object]] = []
        previous = loop.get_exception_handler()
        loop.set_exception_handler(lambda _loop, context: reported.append(context))
        try:
            for point in CANCEL_POINTS:
                store = storage_factory(None)
                opening = asyncio.ensure_future(store.open())
                if isinstance(point, float):
                    await asyncio.sleep(point)
                else:
                    for _ in range(point):
                        await asyncio.sleep(0)
                opening.cancel()
                with suppress(asyncio.CancelledError):
                    await opening
                try:
                    await store.save_thread(thread("t1"))  # opens again
                finally:
                    await store.destroy()
            ending = asyncio.all_tasks() - before - {asyncio.current_task()}
            if ending:  # a task a close started may still be ending
                await asyncio.wait(ending, timeout=5)
            await asyncio.sleep(0.2)  # a connection the server drops reports to its protocol
            gc.collect()  # a future dropped with its failure unretrieved reports it when collected
            await asyncio.sleep(0)
        finally:
            loop.set_exception_handler(previous)
        left = asyncio.all_tasks() - before - {asyncio.current_task()}
        assert not left, f"a cancelled open left tasks running: {left}"
        assert not reported, f"a cancelled open left a failure nobody retrieved: {[c.get('message') for c in reported]}"

    async def test_lifecycle_close_before_open_ends_the_store(self, storage_factory: StorageFactory) -> None:
        store = storage_factory(None)
        await store.close()
        await store.close()
        with pytest.raises(AdapterClosedError):
            await store.open()
        with pytest.raises(AdapterClosedError):
            await store.get_thread("t1")
        with pytest.raises(AdapterClosedError):
            await store.save_thread(thread("t1"))

    async def test_lifecycle_a_store_follows_each_new_event_loop(self, storage_factory: StorageFactory) -> None:
        async with open_store(storage_factory) as store:
            await store.save_thread(thread("t1"))

            async def write(message_id: str) -> None:
                await store.save_messages([message(message_id)])

            async def read() -> list[str]:
                return [m.id for m in (await store.list_messages("t1", per_page=False)).items]

            # one asyncio.run after another in one thread: each loop is closed after its call
            for results in [await _in_threads([lambda: write("m1")]), await _in_threads([lambda: write("m2")])]:
                assert results == [None], f"a store used from a new event loop failed: {results[0]!r}"
            assert await _in_threads([read]) == [["m1", "m2"]]
            assert await read() == ["m1", "m2"]  # and still in the loop that opened it

    async def test_lifecycle_each_event_loop_closes_what_the_store_made_in_it(
        self, storage_factory: StorageFactory
    ) -> None:
        # opened under one asyncio.run, written under a second, read under a third, destroyed under
        # a fourth (sync frameworks call async code so): each loop's connections must be closed in
        # that loop, not dropped with it (asyncpg "unclosed connection", "Unclosed AsyncMongoClient",
        # redis-py "Unclosed RedisCluster client" when collected later, and their sockets open till then)
        # and each loop's end cuts off writes still in flight: what they had opened (a driver's
        # connect, its monitor's) must be closed too, also what is dropped before the collection below
        gc.collect()  # what earlier tests dropped is not this case's
        with warnings.catch_warnings(record=True) as warned:
            warnings.simplefilter("always", ResourceWarning)
            await _use_in_four_loops(storage_factory(None))  # then nothing references the store
            async with open_store(storage_factory) as store:
                await store.save_thread(thread("t1"))
                await _cut_off_in_loops(store)
            leaked = leaked_by_collection()
        leaked += [str(w.message) for w in warned if issubclass(w.category, ResourceWarning)]
        assert leaked == [], "a store left connections of ended event loops unclosed"

    async def test_lifecycle_threads_each_with_its_own_loop_share_one_store(
        self, storage_factory: StorageFactory
    ) -> None:
        store = storage_factory(None)
        try:
            # first the open itself races in every thread: it must run once, and no thread may hang on it
            async def own_thread(index: int) -> list[str]:
                await store.save_thread(thread(f"t{index}"))
                await store.save_messages([message(f"m{index}-{n}", f"t{index}") for n in range(3)])
                return [m.id for m in (await store.list_messages(f"t{index}", per_page=False)).items]

            # then every thread writes into one conversation at once (the SDK's concurrent-access case)
            async def shared(index: int) -> None:
                await store.save_messages([message(f"s{index}", "t0")])

            def bind(work: Callable[[int], Awaitable[object]], index: int) -> Callable[[], Awaitable[object]]:
                return lambda: work(index)

            for work in (own_thread, shared):
                results = await _in_threads([bind(work, i) for i in range(LOOP_THREADS)])
                failed = [r for r in results if isinstance(r, BaseException)]
                assert not failed, f"threads sharing one store failed: {failed!r}"
                if work is own_thread:
                    assert results == [[f"m{i}-{n}" for n in range(3)] for i in range(LOOP_THREADS)]
            held = {m.id for m in (await store.list_messages("t0", per_page=False)).items}
            assert held == {f"m0-{n}" for n in range(3)} | {f"s{i}" for i in range(LOOP_THREADS)}
        finally:
            with suppress(AdapterClosedError):
                await store.destroy()
