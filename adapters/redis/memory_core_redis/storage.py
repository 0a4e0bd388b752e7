"""``RedisStorage``: memory-core on Redis / Valkey, standalone or Cluster.

Every primitive is answered server-side by one Lua script per hash slot
(sorted-set range queries, filters evaluated in Lua), so a read is one round
trip once the location of its ids is known. README.md documents the key
layout, the hash-tag scheme, which writes touch two slots and how they stay
correct, and where costs grow linearly.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import secrets
from collections import defaultdict
from collections.abc import Awaitable, Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any, ClassVar, NamedTuple, TypeVar

from memory_core.builders import StoredTime, build_message, build_resource, build_thread
from memory_core.capabilities import Capability
from memory_core.clock import Clock, from_us, to_us
from memory_core.codec import dumps, loads
from memory_core.errors import (
    AdapterClosedError,
    BackendError,
    ConflictError,
    NotFoundError,
    OwnershipError,
    StaleStateError,
    ValidationError,
    cancelling_after_pending,
)
from memory_core.lineage import CopyPlan
from memory_core.loops import GivenClientLoop, LoopConnections, connect_through_cancel
from memory_core.models import Message, Resource, Thread
from memory_core.options import check_option_names
from memory_core.plan import ReadParts, ReadPlan
from memory_core.query import NOT_GIVEN, MessagePatch, MessageQuery, MetaCondition, ThreadQuery
from memory_core.retry import STALE_WRITES, FaultPoint, Faults, RetryPolicy
from memory_core.storage import BaseStorage, PatchDecision, SaveDecision, no_store, order_key
from memory_core.storage.composed import compose_read, compose_read_state, erase_threads
from redis import exceptions as redis_errors
from redis.asyncio import Redis
from redis.asyncio.cluster import RedisCluster
from redis.asyncio.connection import Connection, ConnectionPool, SSLConnection, UnixDomainSocketConnection
from redis.connection import URL_QUERY_ARGUMENT_PARSERS

from memory_core_redis._keys import Layout, canon, filter_fields, seq_text, thread_member, time_key, time_of_key
from memory_core_redis._scripts import INTENT_LEASE_MS, Scripts
from memory_core_redis._url import DEFAULT_PREFIX, URL_OPTIONS, parse_url, server_identity

__all__ = ["RELEASE_CHUNK", "RedisStorage"]

T = TypeVar("T")

TOMBSTONE_TTL = 86_400
"""Seconds a deleted thread's version is remembered in the store slot, so a
late, reordered update of the global index cannot resurrect it."""

_CACHE_SIZE = 65_536
_MARKERS = ("rsv", "seq", "tc", "msg", "stamp")
"""The store-wide keys (after ``{P}:``) whose presence says a prefix holds
a store (:meth:`RedisStorage.preflight`); :meth:`RedisStorage._destroy`
unlinks them last."""
_CONCURRENT_CALLS = 50
_DEAD_HOLDER = "memory-core:dead-writer"
"""The resource a dead writer (fault point ``dead_write``) reserved ids for."""
"""Script calls one store runs at once (the ``max_connections`` option when
given): redis-py's cluster client has no blocking pool and fails past its
per-node limit, so the store queues its own calls instead."""
_MAX_WINDOW = 2**50
"""Offsets and limits are clamped to this before they reach Lua (whose
numbers are doubles): no store holds that many items, so answers are equal."""
RELEASE_CHUNK = 5_000
"""Message ids one apply call releases: a delete of more releases them in
several calls (each bounded in argument size and server time)."""
_LISTING_CHUNK = 1000
"""Resource ids the listing reads from the store slot's index per script call."""
_BACKFILL_CHUNK = 1000
"""Threads (or resource records) one backfill call registers."""
_SCRIPT_CHUNKS = (500, 1000)
"""The chunk sizes inside the Lua scripts: delete_thread.lua unlinks 500
keys per UNLINK, locate.lua asks 1,000 ids per HMGET (Lua's ``unpack``
must stay under its stack limit)."""
_LONG_SCRIPTS = frozenset({"copy_thread", "delete_thread", "delete_resource", "erase"})
"""Scripts (or steps of ``solo.lua``) whose work grows with the data, not
bounded by a chunk: their replies are read without the client's
``socket_timeout``, the server's liveness probed instead
(:mod:`memory_core_redis._patient`)."""
_LONG_ARGS = 2 * max(_SCRIPT_CHUNKS)
"""A script call with more arguments than this is read as a long one too:
its work grows with them (the claim and apply of a clone's 10^4 ids on a
cluster); chunked calls stay below it."""
_RETRYABLE = (
    redis_errors.ConnectionError,  # includes BusyLoadingError
    redis_errors.TimeoutError,
    redis_errors.ClusterDownError,
    redis_errors.TryAgainError,
    redis_errors.ReadOnlyError,
    redis_errors.MasterDownError,
)


class Snapshot(NamedTuple):
    """What the store slot learns about a changed thread (state.lua's and
    the write steps' thread reply, with the resource added)."""

    thread_id: str
    resource_id: str
    state: str
    """``"l"`` (live) or ``"d"`` (deleted)."""
    version: str
    """The thread's version in its slot; ``""`` when the slot has no trace of it."""
    created_key: str
    updated_key: str
    last_key: str
    """The key of its newest message, ``""`` when it has none."""
    fields: list[str]
    """Filter field pairs, flat."""


def _field_ops(patch: Mapping[str, Any]) -> list[str]:
    """Filter-field changes of a metadata merge: the form, or ``""`` (remove)
    where the new value is a list or dict."""
    out: list[str] = []
    for key, value in patch.items():
        out += ("~" + key, canon(value) or "")
    return out


def _members(patch: Mapping[str, Any]) -> list[str]:
    """Flat ``[key json, value json, ...]`` of an object, for Lua's merge."""
    out: list[str] = []
    for key, value in patch.items():
        out += (dumps(key), dumps(value))
    return out


def _counted(flat: list[str]) -> list[Any]:
    """A flat pair list prefixed with its number of pairs."""
    return [len(flat) // 2, *flat]


def _conditions(conditions: Iterable[MetaCondition]) -> list[str]:
    out: list[str] = []
    for c in conditions:
        form = canon(c.value)
        if form is None:
            raise ValidationError(f"filter.metadata.{c.key}", f"{c.value!r} has no canonical form", "R-META")
        out += ("~" + c.key, form)
    return out


def _thread(resource_id: str, rec: Sequence[str]) -> Thread:
    tid, title, meta, created, updated, last = rec
    return build_thread(
        tid,
        resource_id,
        title,
        loads(meta),
        StoredTime(created),
        StoredTime(updated),
        StoredTime(last) if last else None,
    )


def _message(resource_id: str, rec: Sequence[Any]) -> Message:
    mid, tid, role, kind, content, meta, created, seq = rec
    return build_message(
        mid,
        tid,
        role,  # type: ignore[arg-type]  # a stored role is always one of ROLES
        loads(content),
        resource_id,
        kind,
        loads(meta),
        StoredTime(created),
        int(seq),
    )


def _snapshot(resource_id: str, lua: Sequence[str]) -> Snapshot:
    if lua[1] == "d":  # state.lua's deletion: {id, "d", version or ""}
        return Snapshot(lua[0], resource_id, "d", lua[2], "", "", "", [])
    tid, state, version, ckey, ukey, lkey, *fields = lua
    return Snapshot(tid, resource_id, state, version, ckey, ukey, lkey, list(fields))


class _Claim(NamedTuple):
    """claim.lua's "ok" reply, the first step of a write: first sequence
    number - 1, version floors of the claimed threads, the write's intent
    stamp, and the resource holding each thread it changes (None: no such
    thread); solo.lua's adds ``steps``, the step's reply per group (empty
    when nothing was written: a patch or delete of a thread the directory
    does not know)."""

    first: int
    floors: list[str]
    stamp: str
    owners: list[str | None]
    steps: list[Any]

    @classmethod
    def of(cls, reply: Sequence[Any]) -> _Claim:
        """Decode ``["ok", first, floors, stamp, owners, steps?]``."""
        _, first, floors, stamp, owners, *steps = reply
        return cls(int(first), list(floors), stamp, list(owners), list(steps[0]) if steps else [])


def _message_bounds(query: MessageQuery, *, keyset: bool = True) -> tuple[str, str]:
    """ZRANGEBYLEX (min, max) of a message query: dates and (with
    ``keyset``) its keyset position."""
    lo = "-" if query.created_from_us is None else "[" + time_key(query.created_from_us)
    hi = "+" if query.created_to_us is None else "(" + time_key(query.created_to_us + 1)
    if keyset and query.after is not None:
        created, seq = query.after
        if query.descending:
            edge = "(" + time_key(created) + ":" + seq_text(seq)
            hi = edge if hi == "+" else min(hi, edge)
        else:
            edge = "[" + time_key(created) + ":" + seq_text(seq + 1)
            lo = edge if lo == "-" else max(lo, edge)
    return lo, hi


def _copy_bounds(plan: CopyPlan) -> tuple[str, str]:
    """The lex range of a source's message index a copy reads: from
    ``created_from_us`` (inclusive) up to ``created_to_us`` and ``until``
    (both inclusive, so the bound is exclusive just past them)."""
    lo = "-" if plan.created_from_us is None else "[" + time_key(plan.created_from_us)
    highs = []
    if plan.created_to_us is not None:
        highs.append(time_key(plan.created_to_us + 1))
    if plan.until is not None:
        highs.append(time_key(plan.until[0]) + ":" + seq_text(plan.until[1] + 1))
    return lo, "(" + min(highs) if highs else "+"


def _thread_index(query: ThreadQuery) -> str:
    """Key suffix of the lex index a thread query reads."""
    if query.order_field == "last_message_at":
        return "tld" if query.descending else "tla"
    return "tc" if query.order_field == "created_at" else "tu"


def _thread_bounds(query: ThreadQuery) -> tuple[str, str]:
    if query.after is None:
        return "-", "+"
    edge = "(" + thread_member(*query.after)
    return ("-", edge) if query.descending else (edge, "+")


def _driver_options() -> frozenset[str]:
    """Every keyword redis-py's clients, pools and connections take: what
    ``**client_options`` may hold."""
    names: set[str] = set()
    for target in (Redis, RedisCluster, ConnectionPool):
        names.update(inspect.signature(target.__init__).parameters)
    for connection in (Connection, SSLConnection, UnixDomainSocketConnection):
        names.update(inspect.signature(connection.__init__).parameters)
    names.update(URL_QUERY_ARGUMENT_PARSERS)
    return frozenset(names - {"self", "args", "kwargs", "connection_kwargs"})


_DRIVER_OPTIONS = _driver_options()


class _Locations:
    """Bounded in-process cache: id -> resource id (a hint, always verified:
    a script that misses an id reports it and the directory is asked)."""

    __slots__ = ("_map",)

    def __init__(self) -> None:
        self._map: dict[str, str] = {}

    def get(self, key: str) -> str | None:
        return self._map.get(key)

    def put(self, key: str, resource_id: str) -> None:
        if len(self._map) >= _CACHE_SIZE:
            self._map.clear()
        self._map[key] = resource_id

    def drop(self, key: str) -> None:
        self._map.pop(key, None)


class _CallGate:
    """The gate of one loop's concurrent calls: at most ``limit`` at once
    (an ``asyncio.Semaphore``), and a call that the task's cancellation
    reached is a cancelled call. Every redis-py call the store makes goes
    through a gate (:meth:`RedisStorage._run` for the scripts, plain and
    :func:`~memory_core_redis._patient.call_patiently` alike, and each
    direct command; :meth:`RedisStorage.preflight` through one of its own).

    On Python 3.11 redis-py's ``socket_timeout`` (default 5 s) runs each
    send under ``asyncio.wait_for``, which returns the send's result when the
    cancellation arrives as the send completes: the cancellation is lost and
    the task runs on (issue 25). Two moments bring it there:

    - it arrives during the call: leaving the gate, a task whose
      ``cancelling()`` count grew since it came to the gate raises
      ``CancelledError`` (the call itself has happened, as with any write
      cancelled after it was sent);
    - it was requested before the call and is still pending: a Ctrl-C's
      ``asyncio.Runner`` handler cancels the main task while that task runs
      (between two of its bytecodes), so the cancellation is delivered only
      at the task's next suspension, which can be that ``wait_for``. The
      gate delivers it first, before anything is sent (nothing is written):
      :func:`memory_core.errors.cancelling_after_pending`, the rule every
      adapter's read path follows through :func:`memory_core.errors.guarded`."""

    __slots__ = ("_entered", "_slots")

    def __init__(self, limit: int) -> None:
        self._slots = asyncio.Semaphore(limit)
        self._entered: dict[asyncio.Task[Any] | None, list[int]] = {}

    async def __aenter__(self) -> None:
        task = asyncio.current_task()
        before = await cancelling_after_pending(task)  # read first: a later request counts as during the call
        await self._slots.acquire()
        self._entered.setdefault(task, []).append(before)

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: Any) -> None:
        self._slots.release()
        task = asyncio.current_task()
        stack = self._entered[task]
        before = stack.pop()
        if not stack:
            del self._entered[task]
        if exc_type is None and task is not None and task.cancelling() > before:
            raise asyncio.CancelledError


class _Link(NamedTuple):
    """One event loop's redis-py client, its loaded scripts and the gate of
    its concurrent calls (:class:`_CallGate`)."""

    client: Any
    scripts: Scripts
    calls: _CallGate


class RedisStorage(BaseStorage):
    """memory-core storage on Redis 7+ / Valkey, standalone or Cluster.

    Construction does no I/O; ``open()`` connects and loads the Lua scripts.

    Args:
        url: ``redis://host:port/db``, ``rediss://…``, ``unix:///path.sock``,
            ``redis+cluster://host:port`` (or ``?cluster=true``); query options
            other than ``prefix``/``cluster`` go to redis-py. Default
            ``redis://localhost:6379/0``.
        prefix: key prefix (the store's namespace; any non-empty str). Default:
            the URL's ``prefix`` option, else ``"memory-core"``.
        client: an existing ``redis.asyncio.Redis`` or ``RedisCluster`` created
            with ``decode_responses=True``; it is not closed by ``close()``,
            and it belongs to one event loop (the first that opens the store):
            a call from another loop raises ``ValidationError`` (field
            ``client``). Default: the store makes a client from ``url`` in
            each event loop that uses it (redis-py connections belong to the
            loop that made them), and closes them with the store.
        cluster: force Cluster (True) or standalone (False) client; default
            from the URL.
        clock: injectable clock (see :class:`~memory_core.storage.BaseStorage`).
        **client_options: extra keyword arguments for redis-py's ``from_url``
            (``socket_timeout`` in seconds, ``max_connections`` …).

    Raises:
        ValidationError: a bad URL or an empty prefix.
    """

    backend_name: ClassVar[str] = "redis"
    loop_bound: ClassVar[bool] = True
    chunk_limits: ClassVar[frozenset[int]] = frozenset({RELEASE_CHUNK, *_SCRIPT_CHUNKS})
    capabilities = frozenset({Capability.PERSISTENT, Capability.SHARED_NAMESPACE})
    fault_points = frozenset({FaultPoint.SCRIPTS_LOST, FaultPoint.CONNECTION_LOST, FaultPoint.STALE_WRITE})

    def __init__(
        self,
        url: str = "redis://localhost:6379/0",
        *,
        prefix: str | None = None,
        client: Redis | RedisCluster | None = None,
        cluster: bool | None = None,
        clock: Clock | None = None,
        **client_options: Any,
    ) -> None:
        super().__init__(clock=clock)
        target = parse_url(url)
        # Caught here, before any I/O: redis-py would only fail on connect, with a TypeError.
        check_option_names(
            "redis",
            [*target.driver_options, *client_options],
            URL_OPTIONS,
            driver=_DRIVER_OPTIONS,
            driver_name="redis-py",
        )
        chosen = prefix if prefix is not None else target.prefix or DEFAULT_PREFIX
        if not isinstance(chosen, str) or not chosen:
            raise ValidationError("prefix", "must be a non-empty str")
        self.prefix = chosen
        self._target = target
        self._cluster = target.cluster if cluster is None else cluster
        self._client_options = client_options
        self._owns_client = client is None
        self._given: Any = client
        self._given_loop = GivenClientLoop(self.backend_name)
        self._links: LoopConnections[_Link] = LoopConnections()
        self._keys = Layout(chosen)
        self._thread_at = _Locations()
        self._message_at = _Locations()
        self._solo = False
        self._dying: set[str] = set()  # claim stamps of writes whose last step a dead_write fault skips
        if self._cluster if client is None else isinstance(client, RedisCluster):
            # only a cluster's writes take several steps a writer can die between
            self.fault_points = self.fault_points | {FaultPoint.DEAD_WRITE}
            self.faults = Faults(self.fault_points)

    @classmethod
    def from_url(
        cls, url: str, *, clock: Clock | None = None, namespace: str | None = None, **options: Any
    ) -> RedisStorage:
        """Build from a URL (see the class). ``namespace``, when given, is the
        key prefix; other options are the constructor's keyword arguments."""
        if namespace is not None:
            if not isinstance(namespace, str) or not namespace:
                raise ValidationError("namespace", f"must be a non-empty str, got {namespace!r}")
            options["prefix"] = namespace
        return cls(url, clock=clock, **options)

    @property
    def store_identity(self) -> Hashable:
        """``("redis", address, database, prefix)``: the server and database
        the URL reaches (:func:`memory_core_redis._url.server_identity`:
        ``localhost``/``127.0.0.1``/``::1`` are one host, a missing port is
        6379, a missing database 0) and the key prefix. A cluster is named by
        the seed node of its URL (two seeds of one cluster are not seen as
        one store). A store given its own ``client`` is named by that client
        object instead of the URL.
        """
        if not self._owns_client:
            return (self.backend_name, "client", id(self._given), self.prefix)
        return (self.backend_name, *server_identity(self._target.driver_url), self.prefix)

    @property
    def store_place(self) -> str:
        """``Redis keys of prefix 'mc' (every key of the store)``: what
        :meth:`destroy` unlinks."""
        return f"Redis keys of prefix {self.prefix!r} (every key of the store)"

    def is_retryable(self, exc: Exception) -> bool:
        """Connection errors, timeouts, cluster reconfiguration and failover
        (read-only replica, master down) are transient."""
        return isinstance(exc, _RETRYABLE) or super().is_retryable(exc)

    @property
    def client(self) -> Any:
        """The redis-py client of the running event loop (after ``open()`` in
        it), else the client given at construction (None when none)."""
        link = self._links.get()
        return self._given if link is None else link.client

    def _link(self) -> _Link:
        """The running loop's client, scripts and call gate.

        Raises:
            AdapterClosedError: none in this loop (closed, or not opened in
                this loop: public methods open it first).
        """
        link = self._links.get()
        if link is None:
            raise AdapterClosedError("redis storage is closed")
        return link

    @property
    def _client(self) -> Any:
        return self._link().client

    @property
    def _calls(self) -> _CallGate:
        return self._link().calls

    # ------------------------------------------------------------------ lifecycle

    def _new_client(self) -> Any:
        """A redis-py client for the URL (no I/O): a ``RedisCluster`` for a
        cluster URL, else a ``Redis`` on a plain pool. Every call the store
        makes waits on its own semaphore (``max_connections``, default 50)
        first, so the pool never runs out under bursts of concurrent recalls
        and needs no blocking pool (whose checkout costs about 11 µs a call
        more here: ``benchmarks/RESULTS.md``)."""
        url, options = self._target.driver_url, self._client_options
        if self._cluster:
            return RedisCluster.from_url(url, decode_responses=True, **options)
        return Redis.from_url(url, decode_responses=True, **options)

    async def preflight(self, *, must_exist: bool = False, writes: bool = False) -> None:
        """Check, writing nothing, that the prefix holds a store when it must.

        With ``must_exist`` (``export``, ``copy``'s source, ``prune``) one
        ``EXISTS`` asks whether the prefix has memory-core's store-wide keys:
        ``{P}:rsv``, set at a store's first open, or, for a store written
        before it, ``{P}:seq``/``tc``/``msg``/``stamp``. So a misspelt
        ``?prefix=`` is an error instead of an empty export (``open`` would
        set ``{P}:rsv``). The store's own client is used if it has one, else a
        client made for the check and closed after it. Without ``must_exist``
        nothing is checked: a new prefix is a new store (``writes`` checks
        nothing more: the prefix is memory-core's own key space, and finding
        another application's keys in it would take a scan of the server).

        Raises:
            ValidationError: field ``prefix``, with ``must_exist``: no
                memory-core key under the prefix
                (:func:`~memory_core.storage.no_store`).
            BackendError: the server could not be reached or refused the call.
        """
        if not must_exist:
            return
        store = self._keys.store
        link = self._links.get()
        client = self._given if link is None else link.client
        temporary = client is None
        with self._guard("open"):
            if temporary:
                client = self._new_client()
            try:
                async with _CallGate(1) if link is None else link.calls:
                    found = await client.exists(*(store + key for key in _MARKERS))
            finally:
                if temporary:
                    await client.aclose()
        if not found:
            raise no_store("prefix", self.prefix, "key prefix")

    async def _open(self) -> None:
        # redis-py's cluster client cut mid-initialize is left unclosed: a
        # cancelled open lets the connect finish, then closes it.
        await connect_through_cancel(self._connect_here, lambda _: self._links.drop())

    async def _connect_here(self) -> None:
        """Connect in the running loop (once per loop: ``loop_bound``): a
        client (ours, or the given one in its own loop), its scripts loaded
        and a gate of ``max_connections`` concurrent calls; the resource
        backfill check runs each time (one ``EXISTS`` once it is done)."""
        if self._given is not None:
            self._given_loop.claim()
            client = self._given
            if not client.get_encoder().decode_responses:
                raise ValidationError("client", "must be created with decode_responses=True")
        else:
            client = self._new_client()
        link = _Link(
            client, Scripts(client), _CallGate(int(self._client_options.get("max_connections", _CONCURRENT_CALLS)))
        )
        # ours is closed in its loop by the loop's end at the latest (redis-py's cluster client
        # dropped with its loop reports "Unclosed RedisCluster client" to a later loop)
        await self._links.keep(link, client.aclose if self._owns_client else None)
        try:
            await link.scripts.load()
            # the secret that names deleted threads' tombstones (lib.lua, tombstone_key)
            await client.set(self._keys.store + "key", secrets.token_hex(32), nx=True)
            # one server holds every key: a write may span slots in one script
            self._solo = not isinstance(client, RedisCluster)
            await self._backfill_resources()
        except BaseException:
            await self._links.drop()
            raise

    async def _backfill_resources(self) -> None:
        """Once per store: register the resources a store written before the
        resource listing existed holds (R-RESOURCES): the owners of its
        threads (from the global index, in chunks) and, by one SCAN of this
        store's keys, its resource records. A new store (nothing in its
        store slot) has nothing to register. Idempotent: a backfill cut
        short runs again at the next open."""
        store = self._keys.store
        if await self._client.exists(store + "rsv"):
            return
        if await self._client.exists(store + "seq", store + "tc", store + "msg", store + "stamp"):
            lo = "-"
            while lo:
                last = await self._run("backfill", store, [lo, _BACKFILL_CHUNK])
                lo = "(" + last if last else ""
            owners: list[str] = []
            async for key in self._client.scan_iter(match=self._keys.record_pattern, count=1000):
                owner = self._keys.record_owner(key)
                if owner is not None:
                    owners.append(owner)
            for start in range(0, len(owners), _BACKFILL_CHUNK):
                await self._run("register", store, owners[start : start + _BACKFILL_CHUNK])
        await self._client.set(store + "rsv", "1")

    async def _close(self) -> None:
        await self._links.close_all()  # the caller's client is theirs to close

    async def _destroy(self) -> None:
        # The store-wide keys preflight(must_exist=True) looks for go last: a
        # destroy cut short still leaves a store that running it again finds.
        markers = [self._keys.store + key for key in _MARKERS]
        batch: list[str] = []
        async with self._calls:  # one connection, counted like every call
            async for key in self._client.scan_iter(match=self._keys.pattern, count=1000):
                if key in markers:
                    continue
                batch.append(key)
                if len(batch) >= 500:
                    await self._client.unlink(*batch)
                    batch = []
            if batch:
                await self._client.unlink(*batch)
            await self._client.unlink(*markers)

    # ------------------------------------------------------------------ plumbing

    def _slot(self, resource_id: str) -> str:
        return self._keys.resource(resource_id)

    async def _run(self, name: str, base: str, args: list[Any]) -> Any:
        """Run script ``name`` in the slot of ``base`` (a long one,
        :data:`_LONG_SCRIPTS`, ``solo.lua`` running one or any call of over
        :data:`_LONG_ARGS` arguments, not cut by the client's
        ``socket_timeout``); every call passes the store's fault
        points first (a test hook, :mod:`memory_core.retry`):
        an armed ``scripts_lost`` empties the server's script cache (``SCRIPT
        FLUSH``), an armed ``connection_lost`` makes the server close every
        client connection (``CLIENT KILL TYPE normal``), each then handled as
        the real one is. (``stale_write`` fires in :meth:`_write_saves`,
        ``dead_write`` in :meth:`_claim`.)"""
        link = self._link()
        async with link.calls:
            await self._fire_faults(link.client)
            long = (args[0] if name == "solo" else name) in _LONG_SCRIPTS or len(args) > _LONG_ARGS
            return await link.scripts.run(name, base, args, long=long)

    async def _fire_faults(self, client: Any) -> None:
        """Produce each armed fault of ``fault_points`` with the server's own commands."""
        nodes = {"target_nodes": client.get_nodes()} if isinstance(client, RedisCluster) else {}
        if self.faults.take(FaultPoint.SCRIPTS_LOST):
            await client.execute_command("SCRIPT", "FLUSH", **nodes)
        if self.faults.take(FaultPoint.CONNECTION_LOST):
            with contextlib.suppress(redis_errors.ConnectionError):  # the sender's own connection goes too
                await client.execute_command("CLIENT", "KILL", "TYPE", "normal", "SKIPME", "no", **nodes)

    async def _locate(self, thread_ids: Sequence[str], message_ids: Sequence[str]) -> tuple[list[Any], list[Any]]:
        """Ask the directory (store slot) where ids live; caches the answers."""
        threads, messages = await self._run("locate", self._keys.store, [len(thread_ids), *thread_ids, *message_ids])
        for tid, rid in zip(thread_ids, threads, strict=True):
            if rid is not None:
                self._thread_at.put(tid, rid)
        for mid, rid in zip(message_ids, messages, strict=True):
            if rid is not None:
                self._message_at.put(mid, rid)
        return list(threads), list(messages)

    async def _group(
        self, ids: Sequence[str], at: _Locations, *, threads: bool, fresh: bool
    ) -> tuple[dict[str, list[str]], set[str]]:
        """Resource id -> ids living there, plus the ids answered from cache."""
        groups: dict[str, list[str]] = defaultdict(list)
        cached: set[str] = set()
        unknown: list[str] = []
        for item in ids:
            rid = None if fresh else at.get(item)
            if rid is None:
                unknown.append(item)
            else:
                groups[rid].append(item)
                cached.add(item)
        if unknown:
            tids, mids = (unknown, []) if threads else ([], unknown)
            found = (await self._locate(tids, mids))[0 if threads else 1]
            for item, rid in zip(unknown, found, strict=True):
                if rid is not None:
                    groups[rid].append(item)
        return groups, cached

    async def _on_thread(self, thread_id: str, call: Callable[[str], Awaitable[T | None]]) -> T | None:
        """Run ``call(resource_id)`` where the thread lives; None if it does
        not exist. A stale cached location is detected (None) and retried."""
        rid = self._thread_at.get(thread_id)
        if rid is not None:
            result = await call(rid)
            if result is not None:
                return result
            self._thread_at.drop(thread_id)
        fresh = (await self._locate([thread_id], []))[0][0]
        if fresh is None or fresh == rid:
            return None
        return await call(fresh)

    async def _claim(self, claim_args: list[Any]) -> _Claim:
        """Step one of a write on a cluster (README: "Crash safety"): claim.lua
        with ``claim_args`` (:meth:`_claim_args`).

        Fault point ``dead_write`` (a test hook, :mod:`memory_core.retry`),
        produced as a writer that died leaves things: before the claim a
        dead write reserves the write's message ids for another resource
        (the claim then meets and releases it), and this write's last step
        (:meth:`_apply`) does not run, leaving its intents for the next
        listing to roll forward; the leases of both have run out.

        Raises:
            StaleStateError: an id is held by another resource (see :meth:`_claimed`).
        """
        dead = self.faults.take(FaultPoint.DEAD_WRITE)
        if dead:
            at = 3 + 2 * int(claim_args[2])  # where the (message id, resource id) pairs are counted
            mids = claim_args[at + 1 : at + 1 + 2 * int(claim_args[at]) : 2]
            reserved = await self._run(
                "claim", self._keys.store, self._claim_args(messages=[(mid, _DEAD_HOLDER) for mid in mids])
            )
            if mids and reserved[0] == "ok":  # else one id is held already: the dead write reserved nothing
                await self._outlive([], [(mid, reserved[3]) for mid in mids])
        claim = await self._claimed(lambda: self._run("claim", self._keys.store, claim_args), claim_args)
        if dead:
            self._dying.add(claim.stamp)
        return claim

    async def _outlive(self, threads: Sequence[tuple[str, str]], messages: Sequence[tuple[str, str]]) -> None:
        """Move the (id, stamp) intents of a dead write (fault point
        ``dead_write``) past their lease, as time passing does."""
        link, aged = self._link(), 2 * INTENT_LEASE_MS * 1000
        async with link.calls:
            for suffix, intents in (("pt", threads), ("pm", messages)):
                if intents:
                    scores = {item: int(stamp) - aged for item, stamp in intents}
                    await link.client.zadd(self._keys.store + suffix, scores, xx=True)

    @staticmethod
    def _claim_args(
        *,
        sequences: int = 0,
        threads: Iterable[tuple[str, str]] = (),
        messages: Iterable[tuple[str, str]] = (),
        touched: Sequence[str] = (),
    ) -> list[Any]:
        """claim.lua's arguments, recording intents for the ``touched``
        thread ids: reserve the (id, resource) pairs of ``threads`` and
        ``messages``, allocate ``sequences`` numbers."""
        return [
            "1",
            sequences,
            *_counted([part for pair in threads for part in pair]),
            *_counted([part for pair in messages for part in pair]),
            len(touched),
            *touched,
        ]

    async def _claimed(self, call: Callable[[], Awaitable[list[Any]]], claim_args: list[Any]) -> _Claim:
        """Run ``call`` (a script whose reply starts as claim.lua's, claiming
        with ``claim_args``) until it is "ok"; its reply.

        Each repeat follows the release of one dead reservation, so the call
        runs at most once per id claimed plus once (a :class:`RetryPolicy`
        of that many attempts, no pause).

        Raises:
            StaleStateError: an id is held by another resource (the core
                raises ConflictError). A holder whose slot has no trace of
                the id (a write that died) is rolled back and the call
                repeated, so a dead write never blocks an id.
        """
        threads = int(claim_args[2])
        policy = RetryPolicy(attempts=threads + int(claim_args[3 + 2 * threads]) + 1)
        for _ in policy.tries():
            reply = await call()
            if reply[0] == "ok":
                return _Claim.of(reply)
            _, kind, item, holder, pending, cutoff = reply
            if not await self._release_dead(kind, item, holder, pending, int(cutoff)):
                # never name the other tenant's resource
                what = "thread" if kind == "t" else "message"
                raise StaleStateError(f"{what} {item!r} belongs to another resource")
        raise StaleStateError(f"ids kept being reserved by dead writes {policy.attempts} times")

    async def _solo_write(self, write: str, claim_args: list[Any], groups: Iterable[tuple[str, list[Any]]]) -> _Claim:
        """A whole write as one atomic ``solo.lua`` call (standalone server
        only, README: "Hash tags and Cluster"): claim.lua with
        ``claim_args`` (no intents), step ``write`` in each (resource id,
        step arguments) group, apply.lua. A patch or delete of a thread
        passes one group with resource id ``""``: the script finds the
        thread's resource in the directory.

        Returns:
            claim.lua's reply, with ``steps`` the step's replies (one per
            group) when the write ran; empty when nothing was written (a
            patch or delete of a thread the directory does not know).

        Raises:
            StaleStateError: an id is held by another resource (as :meth:`_claimed`).
        """
        claim_args[0] = "0"  # one atomic script: nothing can be left half done
        args: list[Any] = [write, self._keys.store, TOMBSTONE_TTL, len(claim_args), *claim_args]
        listed = list(groups)
        args.append(len(listed))
        for rid, step in listed:
            args += (self._slot(rid) if rid else "", rid, len(step), *step)
        return await self._claimed(lambda: self._run("solo", self._keys.store, args), claim_args)

    async def _solo_thread(self, write: str, thread_id: str, args: list[Any]) -> tuple[str, Any] | None:
        """``(resource id, step reply)`` of thread write ``write`` (patch or
        delete) run by :meth:`_solo_write` in one call, in the resource the
        directory names; None when there is no such thread (not in the
        directory, or not in its resource's slot: the step answered None),
        and then the thread loses its cached location."""
        claim = await self._solo_write(write, self._claim_args(touched=[thread_id]), [("", args)])
        rid, step = claim.owners[0], claim.steps[0] if claim.steps else None
        if rid is None or step is None:
            self._thread_at.drop(thread_id)
            return None
        return rid, step

    async def _message_write(
        self, step: str, bump: Sequence[str], calls: list[tuple[str, list[Any]]]
    ) -> tuple[list[Any], _Claim | None]:
        """Run message write ``step`` (``patch_messages``/``delete_messages``)
        with its (resource id, arguments) calls, intents for the threads in
        ``bump``: the step's replies, and the claim whose intents the caller
        clears with :meth:`_apply` (None on a standalone server, where
        :meth:`_solo_write` ran claim, steps and apply in one script, or
        when there is no call: then nothing is sent)."""
        if not calls:
            return [], None
        claim_args = self._claim_args(touched=bump)
        if self._solo:
            return (await self._solo_write(step, claim_args, calls)).steps, None
        claim = await self._claim(claim_args)
        return await self._gather(self._run(step, self._slot(rid), args) for rid, args in calls), claim

    async def _release_dead(self, kind: str, item: str, holder: str, pending: str, cutoff: int) -> bool:
        """Roll back a reservation of ``item`` by ``holder`` that no live
        write backs (its intent older than the lease or gone) and that the
        holder's slot has no trace of; True when released."""
        if pending and int(pending) >= cutoff:
            return False  # a write in flight holds it
        tids, mids = ([item], []) if kind == "t" else ([], [item])
        threads, messages = await self._run("state", self._slot(holder), [len(tids), *tids, *mids])
        intent = [(item, pending)] if pending else []
        if kind == "m":
            if messages[0]:
                return False
            await self._apply([], [(item, holder)], messages=intent)
            return True
        snap = _snapshot(holder, threads[0])
        await self._apply([snap], threads=intent)
        return snap.state == "d"

    async def _roll_forward(self, pending: Sequence[Sequence[Any]], cutoff: int) -> None:
        """Bring the store slot up to date with the slots of threads that
        have intents (``[thread id, resource id or None, stamp]`` each): apply
        what each slot holds now (always safe: newest version wins) and
        clear the intents older than the lease, whose writes are dead."""
        groups: dict[str, list[str]] = defaultdict(list)
        stamps: dict[str, int] = {}
        for tid, rid, stamp in pending:
            stamps[tid] = int(stamp)
            if rid is not None:
                groups[rid].append(tid)
        replies = await self._gather(
            self._run("state", self._slot(rid), [len(tids), *tids]) for rid, tids in groups.items()
        )
        snapshots: list[Snapshot] = []
        for rid, (threads, _) in zip(groups, replies, strict=True):
            for lua in threads:
                snap = _snapshot(rid, lua)
                # no trace in the slot: a dead write's claim, or a live one's
                # not yet written (then leave it alone)
                if snap.version != "" or stamps[snap.thread_id] < cutoff:
                    snapshots.append(snap)
        dead = [(tid, str(stamp)) for tid, stamp in stamps.items() if stamp < cutoff]
        await self._apply(snapshots, threads=dead)

    async def _apply(
        self,
        snapshots: Sequence[Snapshot],
        release: Sequence[tuple[str, str]] = (),
        *,
        threads: Sequence[tuple[str, str]] = (),
        messages: Sequence[tuple[str, str]] = (),
    ) -> None:
        """Last step of a write (README: "apply"): update the store slot's
        thread records and indexes from snapshots, release deleted message
        ids (RELEASE_CHUNK per call), then clear the (id, stamp) intents of
        ``threads`` and ``messages``. A write whose claim met fault point
        ``dead_write`` dies here instead (:meth:`_claim`): its intents are
        moved past their lease and nothing else is done."""
        dying = {stamp for _, stamp in (*threads, *messages)} & self._dying
        if dying:
            self._dying -= dying
            await self._outlive(threads, messages)
            return
        flat_release = [part for pair in release for part in pair]
        step = 2 * RELEASE_CHUNK
        chunks = [flat_release[i : i + step] for i in range(0, len(flat_release), step)] or [[]]
        for chunk in chunks[:-1]:
            await self._run("apply", self._keys.store, [TOMBSTONE_TTL, 0, *_counted(chunk), 0, 0])
        args: list[Any] = [TOMBSTONE_TTL, len(snapshots)]
        for tid, rid, state, version, ckey, ukey, lkey, fields in snapshots:
            args += (tid, rid, state, version, ckey, ukey, lkey, *_counted(fields))
        args += _counted(chunks[-1])
        args += _counted([part for pair in threads for part in pair])
        args += _counted([part for pair in messages for part in pair])
        await self._run("apply", self._keys.store, args)

    async def _gather(self, calls: Iterable[Awaitable[T]]) -> list[T]:
        return list(await asyncio.gather(*calls))

    # ------------------------------------------------------------------ threads

    async def _get_thread(self, thread_id: str) -> Thread | None:
        async def read(rid: str) -> Thread | None:
            rec = (await self._run("get_threads", self._slot(rid), [thread_id]))[0]
            return None if rec is None else _thread(rid, rec)

        return await self._on_thread(thread_id, read)

    async def _save_thread_checked(self, thread: Thread) -> Thread | None:
        """:meth:`_put_thread` without the core's read first: the claim checks
        the owner (a conflict writes nothing; mode "any" raises
        StaleStateError for nothing else), and the snapshot of the written
        thread carries the key of its newest message, which a replace keeps.
        One script call on a standalone server, three on a cluster."""
        try:
            snap = await self._write_thread(thread, "any")
        except StaleStateError:
            return None
        lkey = _snapshot(thread.resource_id, snap).last_key
        return replace(thread, last_message_at=from_us(time_of_key(lkey))) if lkey else thread

    async def _insert_thread(self, thread: Thread) -> None:
        await self._write_thread(thread, "new")

    async def _write_thread(self, thread: Thread, mode: str) -> list[Any]:
        """Claim the id for the resource, then write the thread ("new": only
        if absent, atomically in the resource slot) and its index entries:
        one :meth:`_solo_write` call on a standalone server, claim, put_thread and
        apply on a cluster. Returns put_thread.lua's snapshot of the thread.

        Raises:
            StaleStateError: mode "new" and the thread exists, or the id is
                held by another resource; nothing written.
        """
        if thread.created_at is None or thread.updated_at is None:  # pragma: no cover - the core never sends one
            raise ValidationError(
                "thread.created_at", "the core gives a thread to store its times; this one has none", "R-TIME"
            )
        rid = thread.resource_id
        claim_args = self._claim_args(threads=[(thread.id, rid)], touched=[thread.id])
        fields = filter_fields(thread.metadata)
        created, updated = to_us(thread.created_at), to_us(thread.updated_at)
        args = [mode, thread.id, 0, thread.title, dumps(thread.metadata), created, updated, *_counted(fields)]
        claim = None
        if self._solo:
            snap = (await self._solo_write("put_thread", claim_args, [(rid, args)])).steps[0]
        else:
            claim = await self._claim(claim_args)
            args[2] = claim.floors[0]
            snap = await self._run("put_thread", self._slot(rid), args)
        intent = [] if claim is None else [(thread.id, claim.stamp)]
        if snap == "exists":
            if claim is not None:
                await self._apply([], threads=intent)
            raise StaleStateError(f"thread {thread.id!r} exists")
        self._thread_at.put(thread.id, rid)
        if claim is not None:
            await self._apply([_snapshot(rid, snap)], threads=intent)
        return list(snap)

    async def _copy_thread(self, plan: CopyPlan, now_us: int) -> list[str] | None:
        """A clone or branch inside the server (``copy_thread.lua``: the
        thread's insert and the copy of the selection in the target's
        resource slot). Standalone: one :meth:`_solo_write` call, any two
        resources. Cluster: claim (thread id, new message ids, sequences,
        intents), copy, apply, crash-safe as every multi-slot write (README:
        "Crash safety") when source and target share a resource (one slot);
        a copy into another resource lives in another slot, which no script
        can read, so it is composed by the core (None)."""
        thread = plan.thread
        rid = thread.resource_id
        source_rid = self._thread_at.get(plan.source_id) or (await self._locate([plan.source_id], []))[0][0]
        if source_rid is None or (source_rid != rid and not self._solo):
            return None
        if thread.created_at is None or thread.updated_at is None:
            raise ValidationError(
                "thread.created_at", "the core gives a thread to store its times; this one has none", "R-TIME"
            )
        fields = filter_fields(thread.metadata)
        created, updated = to_us(thread.created_at), to_us(thread.updated_at)
        put = ["new", thread.id, 0, thread.title, dumps(thread.metadata), created, updated, *_counted(fields)]
        keep = [-1] if plan.message_ids is None else [len(plan.message_ids), *plan.message_ids]
        lo, hi = _copy_bounds(plan)
        args = [0, 0, now_us, self._slot(source_rid), plan.source_id, lo, hi]
        args += (-1 if plan.newest is None else plan.newest, plan.size_limit, *keep)
        args += (len(plan.new_ids), *plan.new_ids, len(put), *put)
        claim_args = self._claim_args(
            sequences=len(plan.new_ids),
            threads=[(thread.id, rid)],
            messages=[(new, rid) for new in plan.new_ids],
            touched=[thread.id],
        )
        if self._solo:
            reply = (await self._solo_write("copy_thread", claim_args, [(rid, args)])).steps[0]
        else:
            claim = await self._claim(claim_args)
            args[:2] = [claim.first, claim.floors[0]]
            reply = await self._run("copy_thread", self._slot(rid), args)
            snapshots = [_snapshot(rid, reply[1])] if reply[0] == "ok" else []
            await self._apply(
                snapshots,
                [(new, rid) for new in reply[3]],
                threads=[(thread.id, claim.stamp)],
                messages=[(new, claim.stamp) for new in plan.new_ids],
            )
        if reply[0] == "exists":
            raise StaleStateError(f"thread {thread.id!r} exists")
        if reply[0] == "over":
            raise plan.too_large(reply[1])
        self._thread_at.put(thread.id, rid)
        for new in plan.new_ids[: len(reply[2])]:
            self._message_at.put(new, rid)
        return list(reply[2])

    async def _patch_thread(
        self, thread_id: str, title: str | None, metadata: dict[str, Any] | None, now_us: int
    ) -> Thread | None:
        found = await self._conditional_thread_patch(thread_id, title, metadata, now_us, ("-", ""))
        return found if isinstance(found, Thread) else None

    async def _swap_thread_memory(
        self, thread_id: str, expected: str | None, value: str, now_us: int, metadata: dict[str, Any] | None = None
    ) -> bool | None:
        condition = ("n", "") if expected is None else ("s", dumps(expected))
        patch = {**(metadata or {}), "working_memory": value}
        found = await self._conditional_thread_patch(thread_id, None, patch, now_us, condition)
        return None if found is None else found != "mismatch"

    async def _conditional_thread_patch(
        self,
        thread_id: str,
        title: str | None,
        metadata: dict[str, Any] | None,
        now_us: int,
        condition: tuple[str, str],
    ) -> Thread | str | None:
        """patch_thread.lua where the thread lives: the updated thread,
        ``"mismatch"`` (condition failed, nothing written) or None (missing)."""
        patch = metadata or {}
        args = [
            thread_id,
            now_us,
            "0" if title is None else "1",
            title or "",
            *_counted(_members(patch)),
            *_counted(_field_ops(patch)),
            *condition,
        ]

        rid: str | None
        if self._solo:
            found = await self._solo_thread("patch_thread", thread_id, args)
            rid, reply = (None, None) if found is None else found
        else:
            claim = await self._claim(self._claim_args(touched=[thread_id]))
            rid, intent = claim.owners[0], [(thread_id, claim.stamp)]
            reply = None if rid is None else await self._run("patch_thread", self._slot(rid), args)
            if rid is None or reply is None or reply == "mismatch":
                await self._settle(thread_id, rid, intent, missing=reply is None)
            else:
                await self._apply([_snapshot(rid, reply[1])], threads=intent)
        if rid is None or reply is None:
            return None
        if reply == "mismatch":
            return "mismatch"
        record, _ = reply  # patch_thread.lua: {thread record, snapshot}
        return _thread(rid, record)

    async def _settle(self, thread_id: str, rid: str | None, intent: list[tuple[str, str]], *, missing: bool) -> None:
        """End a thread write that changed nothing: clear its intent, and
        when the directory named a resource whose slot lacks the thread (a
        deletion that died before its last step), apply that deletion."""
        snapshots: list[Snapshot] = []
        if missing and rid is not None:
            self._thread_at.drop(thread_id)
            threads, _ = await self._run("state", self._slot(rid), [1, thread_id])
            snap = _snapshot(rid, threads[0])
            if snap.version != "":  # a live or tombstoned thread; no trace: maybe a claim in flight
                snapshots.append(snap)
        await self._apply(snapshots, threads=intent)

    async def _delete_thread(self, thread_id: str) -> int:
        if self._solo:
            found = await self._solo_thread("delete_thread", thread_id, [thread_id, TOMBSTONE_TTL])
            self._thread_at.drop(thread_id)
            deleted: list[str] = []
            if found is not None:
                _, (_, deleted) = found  # delete_thread.lua: {version, message ids}
            for mid in deleted:
                self._message_at.drop(mid)
            return len(deleted)
        claim = await self._claim(self._claim_args(touched=[thread_id]))
        rid, intent = claim.owners[0], [(thread_id, claim.stamp)]
        self._thread_at.drop(thread_id)
        reply = None if rid is None else await self._run("delete_thread", self._slot(rid), [thread_id, TOMBSTONE_TTL])
        if rid is None or reply is None:
            # also what a retry of a delete that died after its slot's step finds
            await self._settle(thread_id, rid, intent, missing=True)
            return 0
        version, ids = reply
        for mid in ids:
            self._message_at.drop(mid)
        snap = Snapshot(thread_id, rid, "d", version, "", "", "", [])
        await self._apply([snap], [(mid, rid) for mid in ids], threads=intent)
        return len(ids)

    async def _threads(self, mode: str, query: ThreadQuery) -> Any:
        index = _thread_index(query)
        lo, hi = _thread_bounds(query)
        limit = -1 if query.limit is None else min(query.limit, _MAX_WINDOW)
        conds = _conditions(query.metadata)
        scope, base = ("g", self._keys.store) if query.resource_id is None else ("r", self._slot(query.resource_id))
        args = [
            mode,
            scope,
            index,
            lo,
            hi,
            "1" if query.descending else "0",
            min(query.offset, _MAX_WINDOW),
            limit,
            *_counted(conds),
        ]
        reply = await self._run("threads", base, [*args, "1"])
        if isinstance(reply, list) and reply and reply[0] == "pending":
            # writes that did not finish (or are in flight) touched threads:
            # bring the global index up to date with their slots, then read
            await self._roll_forward(reply[2:], int(reply[1]))
            reply = await self._run("threads", base, [*args, "0"])
        return reply

    async def _list_threads(self, query: ThreadQuery) -> list[Thread]:
        found = await self._threads("l", query)
        if query.resource_id is not None:
            return [_thread(query.resource_id, rec) for rec in found if rec is not None]
        # Store-wide listing: the window comes from the global index, the
        # records from their resources' slots (one call per slot, in parallel).
        groups: dict[str, list[str]] = defaultdict(list)
        for tid, rid in found:
            if rid is not None:
                groups[rid].append(tid)
        records: dict[str, Thread] = {}
        for rid, recs in zip(
            groups,
            await self._gather(self._run("get_threads", self._slot(rid), tids) for rid, tids in groups.items()),
            strict=True,
        ):
            for rec in recs:
                if rec is not None:
                    records[rec[0]] = _thread(rid, rec)
        return [records[tid] for tid, _ in found if tid in records]

    async def _count_threads(self, query: ThreadQuery) -> int:
        return int(await self._threads("c", query))

    # ------------------------------------------------------------------ messages

    async def _get_messages(self, ids: Sequence[str]) -> list[Message]:
        wanted = list(dict.fromkeys(ids))
        found: list[Message] = []
        fresh = False
        while wanted:
            groups, cached = await self._group(wanted, self._message_at, threads=False, fresh=fresh)
            stale: list[str] = []
            replies = await self._gather(self._run("get_messages", self._slot(r), m) for r, m in groups.items())
            for (rid, mids), recs in zip(groups.items(), replies, strict=True):
                for mid, rec in zip(mids, recs, strict=True):
                    if rec is not None:
                        found.append(_message(rid, rec))
                    elif mid in cached:
                        self._message_at.drop(mid)
                        stale.append(mid)
            if fresh:
                break
            wanted, fresh = stale, True
        return found

    async def _write_saves(self, messages: Sequence[Message], bump: Sequence[str], now_us: int) -> list[int]:
        """save_messages.lua in each resource of ``messages`` (claim first,
        apply last on a cluster); raises StaleStateError when a slot finds
        the core's read stale (the core reads, decides and writes again).
        Fault point ``stale_write`` (a test hook, :mod:`memory_core.retry`)
        tells the script the first message's stored/new state the other way
        round from the read, as a concurrent save or delete of that id does:
        the script detects it as it detects the real one."""
        stale_first = self.faults.take(FaultPoint.STALE_WRITE)
        groups: dict[str, list[Any]] = defaultdict(list)
        sizes: dict[str, int] = defaultdict(int)
        for index, m in enumerate(messages):
            if m.resource_id is None or m.created_at is None:  # pragma: no cover - the core never sends one
                raise ValidationError(
                    f"messages[{index}]", "the core gives a message to store its resource_id and time", "R-TIME"
                )
            sizes[m.resource_id] += 1
            # a new message's member and sequence are made in Lua from the claim's first number
            new = m.sequence is None
            groups[m.resource_id] += (
                m.id,
                m.thread_id,
                m.role,
                m.type,
                dumps(m.content),
                dumps(m.metadata),
                to_us(m.created_at),
                "*" if new != (stale_first and index == 0) else "",
                index + 1 if new else m.sequence,
                *_counted(filter_fields(m.metadata)),
            )
        claim_args = self._claim_args(
            sequences=len(messages), messages=[(m.id, m.resource_id or "") for m in messages], touched=bump
        )

        def save_args(first: int, rid: str) -> list[Any]:
            return [now_us, first, sizes[rid], *groups[rid], len(bump), *bump]

        if self._solo:
            claim = await self._solo_write("save_messages", claim_args, [(rid, save_args(0, rid)) for rid in groups])
            first, replies = claim.first, claim.steps
        else:
            claim = await self._claim(claim_args)
            first = claim.first
            replies = await self._gather(
                self._run("save_messages", self._slot(rid), save_args(first, rid)) for rid in groups
            )
        snapshots: list[Snapshot] = []
        unused: list[tuple[str, str]] = []
        stale: str | None = None
        for rid, reply in zip(groups, replies, strict=True):
            if reply[0] == "stale":  # {"stale", id, new ids never written}
                _, stale, new_ids = reply
                unused += ((mid, rid) for mid in new_ids)
                continue
            _, snaps = reply  # {sequences, snapshots}
            snapshots += (_snapshot(rid, s) for s in snaps)
        for m in messages:
            if m.resource_id is not None and (m.id, m.resource_id) not in unused:
                self._message_at.put(m.id, m.resource_id)
        if not self._solo:
            intents = [(tid, claim.stamp) for tid in bump]
            await self._apply(snapshots, unused, threads=intents, messages=[(m.id, claim.stamp) for m in messages])
        if stale is not None:
            raise StaleStateError(f"{stale!r} changed while saving")
        return [first + index + 1 if m.sequence is None else m.sequence for index, m in enumerate(messages)]

    async def _save_checked(
        self, thread_ids: Sequence[str], message_ids: Sequence[str], decide: SaveDecision, now_us: int
    ) -> tuple[list[Message], list[int]]:
        """On a standalone server, no read before the write when the state
        can be guessed: every thread's location is cached, all in one
        resource, and no message id is (so all are presumably new). Then
        ``decide`` runs on that guess and the one script writing the batch
        verifies it (each thread in that resource's slot, each message id
        new there and held by no other resource: else it writes nothing and
        reports it). A guess ``decide`` refuses, or the write finds wrong,
        costs a read and a second decision, as on a cluster (read with
        :func:`~memory_core.storage.composed.compose_read_state`, decide,
        then the same write, which verifies the read)."""
        guess = self._guessed_owners(thread_ids, message_ids)
        if guess is not None:
            try:
                records, bump = decide({tid: Thread(tid, rid) for tid, rid in guess.items()}, [])
                return records, await self._write_saves(records, bump, now_us)
            except (NotFoundError, OwnershipError, ConflictError):  # StaleStateError too
                pass  # refused on a guess, not on facts: decide again on what is stored
        threads, stored = await compose_read_state(self, thread_ids, message_ids)
        records, bump = decide(threads, stored)
        return records, await self._write_saves(records, bump, now_us)

    def _guessed_owners(self, thread_ids: Sequence[str], message_ids: Sequence[str]) -> dict[str, str] | None:
        """Thread id -> cached resource of each thread, when a save may skip
        its read (see :meth:`_save_checked`); None when it may not."""
        if not self._solo or any(self._message_at.get(mid) is not None for mid in message_ids):
            return None
        owners: dict[str, str] = {}
        for tid in thread_ids:
            rid = self._thread_at.get(tid)
            if rid is None:
                return None
            owners[tid] = rid
        return owners if len(set(owners.values())) == 1 else None

    async def _patch_checked(
        self, thread_ids: Sequence[str], message_ids: Sequence[str], decide: PatchDecision, now_us: int
    ) -> list[Message]:
        """A read (:func:`~memory_core.storage.composed.compose_read_state`)
        and ``decide``, then one write that returns the
        records it wrote (no read after). The checks stay in Python: R-SIZE
        of a merged message is counted on the text Python's encoder writes,
        and a move target missing from the message's slot may be missing or
        another resource's (two errors), so the read comes first."""
        targets, stored = await compose_read_state(self, thread_ids, message_ids)
        patches, bump = decide(targets, stored)
        return await self._write_patches(patches, bump, now_us) if patches else []

    async def _write_patches(self, patches: Sequence[MessagePatch], bump: Sequence[str], now_us: int) -> list[Message]:
        """patch_messages.lua in each resource's slot; the patched messages as stored."""
        by_id = {p.id: p for p in patches}
        groups, _ = await self._group(list(by_id), self._message_at, threads=False, fresh=False)
        calls = []
        for rid, mids in groups.items():
            args: list[Any] = [now_us, len(mids)]
            for mid in mids:
                p = by_id[mid]
                args += (mid, p.role or "", "0" if p.type is None else "1", p.type or "")
                if p.content is None:
                    args += ("-", "", 0)
                elif isinstance(p.content, dict):
                    args += ("o", "", *_counted(_members(p.content)))
                else:
                    args += ("s", dumps(p.content), 0)
                meta = p.metadata or {}
                args += (*_counted(_members(meta)), *_counted(_field_ops(meta)), p.thread_id or "")
            calls.append((rid, [*args, len(bump), *bump]))
        replies, claim = await self._message_write("patch_messages", bump, calls)
        snapshots: list[Snapshot] = []
        written: list[Message] = []
        stale: str | None = None
        for (rid, _), reply in zip(calls, replies, strict=True):
            if reply[0] == "stale":  # {"stale", id, "thread" | "message"}
                _, item, kind = reply
                stale = f"{kind} {item!r}"
                continue
            _, snaps, records = reply  # {_, snapshots, message records}
            snapshots += (_snapshot(rid, s) for s in snaps)
            written += (_message(rid, rec) for rec in records)
        if claim is not None:
            await self._apply(snapshots, threads=[(tid, claim.stamp) for tid in bump])
        if stale is not None:
            raise StaleStateError(f"{stale} changed while updating")
        return written

    async def _delete_in_slots(
        self, ids: Sequence[str], bump: Sequence[str], now_us: int
    ) -> tuple[list[str], str | None]:
        """delete_messages.lua in each resource's slot: the ids deleted and a
        message found in a thread not in ``bump`` (None when none was). A
        slot that finds one deletes nothing; on a cluster the other slots'
        deletes stand (README: "Crash safety"), on a standalone server no
        slot writes (solo.lua's dry run)."""
        groups, _ = await self._group(list(dict.fromkeys(ids)), self._message_at, threads=False, fresh=False)
        calls = [(rid, [len(mids), *mids, len(bump), *bump, now_us]) for rid, mids in groups.items()]
        replies, claim = await self._message_write("delete_messages", bump, calls)
        snapshots: list[Snapshot] = []
        release: list[tuple[str, str]] = []
        stale: str | None = None
        for rid, reply in zip(groups, replies, strict=True):
            if reply[0] == "stale":  # {"stale", id}: that slot wrote nothing
                _, stale = reply
                continue
            deleted, snaps = reply
            snapshots += (_snapshot(rid, s) for s in snaps)
            release += ((mid, rid) for mid in deleted)
            for mid in deleted:
                self._message_at.drop(mid)
        if claim is not None:
            await self._apply(snapshots, release, threads=[(tid, claim.stamp) for tid in bump])
        return [mid for mid, _ in release], stale

    async def _delete_found(self, ids: Sequence[str], now_us: int) -> int:
        """On a standalone server one atomic :meth:`_solo_write` call: the
        directory names each id's resource and the resource's slot its
        thread, so no read comes first. On a cluster a read for the threads
        to bump comes first, since the claim must record intents for them
        before any slot is written (README: "Crash safety"); a slot found
        stale is read and deleted again while the other slots' deletes
        stand, so the count stays this call's (of racing deletes of one id
        exactly one counts it)."""
        if not self._solo:
            taken: set[str] = set()
            for tried in STALE_WRITES.tries():
                found = await self._get_messages([mid for mid in ids if mid not in taken])
                if not found:
                    return len(taken)
                bump = list(dict.fromkeys(m.thread_id for m in found))
                deleted, stale = await self._delete_in_slots([m.id for m in found], bump, now_us)
                taken.update(deleted)
                if stale is None:
                    return len(taken)
                await STALE_WRITES.pause(tried)  # the core's retry policy, for the stale slot's part
            raise StaleStateError(f"message {stale!r} kept moving while deleting")
        claim = await self._solo_write("delete_found", self._claim_args(), [("", [len(ids), *ids, now_us])])
        # The script names the threads from the slots themselves: never stale.
        deleted = [mid for removed, _ in claim.steps for mid in removed]
        for mid in deleted:
            self._message_at.drop(mid)
        return len(deleted)

    async def _messages(self, mode: str, query: MessageQuery) -> list[tuple[str, Any]]:
        """Run messages.lua in every slot the query covers: (resource id,
        count or records) per slot. With several slots, each returns its first
        ``offset + limit`` and the caller merges."""
        lo, hi = _message_bounds(query)
        desc = "1" if query.descending else "0"
        conds = _counted(_conditions(query.metadata))

        def head(offset: int, limit: int) -> list[Any]:
            return [mode, lo, hi, desc, offset, limit, *conds]

        limit = -1 if query.limit is None else min(query.limit, _MAX_WINDOW)
        offset = min(query.offset, _MAX_WINDOW)
        if query.thread_ids is None or query.resource_id is not None:
            if query.resource_id is None:  # pragma: no cover - the core never sends one
                raise ValidationError("resource_id", "a message query without thread ids names its resource", "R-OWN")
            tids = [] if query.thread_ids is None else list(dict.fromkeys(query.thread_ids))
            args = [*head(offset, limit), len(tids), *tids]
            reply = await self._run("messages", self._slot(query.resource_id), args)
            return [(query.resource_id, reply[0])]
        tids = list(dict.fromkeys(query.thread_ids))
        fresh = False  # True: the locations come from the directory, not the cache
        while True:
            groups, cached = await self._group(tids, self._thread_at, threads=True, fresh=fresh)
            # one slot answers the window itself; several each return their
            # first offset + limit and the caller merges
            window = head(offset, limit) if len(groups) == 1 else head(0, -1 if limit < 0 else offset + limit)
            replies = await self._gather(
                self._run("messages", self._slot(rid), [*window, len(ts), *ts]) for rid, ts in groups.items()
            )
            stale = {tid for _, missing in replies for tid in missing if tid in cached}
            if not stale or fresh:
                return [(rid, payload) for rid, (payload, _) in zip(groups, replies, strict=True)]
            for tid in stale:
                self._thread_at.drop(tid)
            fresh = True

    async def _list_messages(self, query: MessageQuery) -> list[Message]:
        parts = await self._messages("l", query)
        found = [_message(rid, rec) for rid, recs in parts for rec in recs if rec is not None]
        if len(parts) == 1:
            return found
        found.sort(key=order_key, reverse=query.descending)
        end = None if query.limit is None else query.offset + query.limit
        return found[query.offset : end]

    async def _count_messages(self, query: MessageQuery) -> int:
        return sum(int(n) for _, n in await self._messages("c", query))

    async def _message_window(self, message_id: str, before: int, after: int) -> list[Message]:
        args = [message_id, min(before, _MAX_WINDOW), min(after, _MAX_WINDOW)]
        rid = self._message_at.get(message_id)
        if rid is not None:
            recs = await self._run("window", self._slot(rid), args)
            if recs:
                return [_message(rid, rec) for rec in recs if rec is not None]
            self._message_at.drop(message_id)
        fresh = (await self._locate([], [message_id]))[1][0]
        if fresh is None or fresh == rid:
            return []
        recs = await self._run("window", self._slot(fresh), args)
        return [_message(fresh, rec) for rec in recs if rec is not None]

    # ------------------------------------------------------------------ read plans

    async def _read(self, plan: ReadPlan) -> ReadParts:
        """One ``read`` script when the whole plan lives in one resource's
        slot (named by the plan or known from cached locations); otherwise,
        or when an id was not in that slot, the plan composed from this
        adapter's simple reads (:func:`~memory_core.storage.composed.compose_read`,
        which locate ids through the directory)."""
        rid = self._plan_slot(plan)
        if rid is not None:
            parts = await self._read_slot(rid, plan)
            if parts is not None:
                return parts
        return await compose_read(self, plan)

    def _plan_slot(self, plan: ReadPlan) -> str | None:
        """The one resource whose slot holds everything ``plan`` names, or None."""
        slots: set[str] = set(plan.resources)
        query = plan.messages
        if query is not None:
            if query.resource_id is not None:
                slots.add(query.resource_id)
            else:
                if query.thread_ids is None:  # pragma: no cover - the core never sends one
                    raise ValidationError("thread_id", "a message query names its threads or its resource", "R-OWN")
                for tid in query.thread_ids:
                    rid = self._thread_at.get(tid)
                    if rid is None:
                        return None
                    slots.add(rid)
        if plan.thread_page is not None:
            if plan.thread_page.resource_id is None:
                return None
            slots.add(plan.thread_page.resource_id)
        # Threads and windows not cached are looked for in the same slot.
        slots.update(rid for rid in map(self._thread_at.get, plan.threads) if rid is not None)
        slots.update(rid for rid in (self._message_at.get(w[0]) for w in plan.windows) if rid is not None)
        return slots.pop() if len(slots) == 1 else None

    async def _read_slot(self, rid: str, plan: ReadPlan) -> ReadParts | None:
        """``plan`` answered by read.lua in ``rid``'s slot; None when an id
        it names is not there (stale or missing location)."""
        args: list[Any] = [len(plan.threads), *plan.threads, "1" if plan.resources or plan.owner_resources else "0"]
        query = plan.messages
        if query is None:
            args.append("0")
        else:
            tids = [] if query.thread_ids is None else list(dict.fromkeys(query.thread_ids))
            limit = -1 if query.limit is None else min(query.limit, _MAX_WINDOW)
            # no total wanted (query.count False): the script counts nothing
            args += ("1", "1" if query.count else "0", *_message_bounds(query, keyset=False))
            args += _message_bounds(query)
            args += ("1" if query.descending else "0", min(query.offset, _MAX_WINDOW), limit)
            args += (*_counted(_conditions(query.metadata)), len(tids), *tids)
        page = plan.thread_page
        if page is None:
            args.append("0")
        else:
            limit = -1 if page.limit is None else min(page.limit, _MAX_WINDOW)
            args += ("1", _thread_index(page), *_thread_bounds(page), "1" if page.descending else "0")
            args += (min(page.offset, _MAX_WINDOW), limit, *_counted(_conditions(page.metadata)))
        args.append(len(plan.windows))
        for mid, before, after in plan.windows:
            args += (mid, min(before, _MAX_WINDOW), min(after, _MAX_WINDOW))
        threads_rec, resource_rec, messages_rec, page_rec, windows_rec = await self._run("read", self._slot(rid), args)
        threads: dict[str, Thread] = {}
        for tid, rec in zip(plan.threads, threads_rec, strict=True):
            if rec is None:
                self._thread_at.drop(tid)
                return None
            self._thread_at.put(tid, rid)
            threads[tid] = _thread(rid, rec)
        resource = _stored_resource(rid, resource_rec) if resource_rec else None
        resources = {} if resource is None else {rid: resource}
        message_total, messages = 0, []
        if query is not None:
            total, records, missing = messages_rec  # missing: thread ids not in this slot
            message_total = int(total)
            messages = [_message(rid, rec) for rec in records if rec is not None]
            if query.resource_id is None and missing:
                for tid in missing:
                    self._thread_at.drop(tid)
                return None
        thread_total, thread_items = 0, []
        if page is not None:
            total, records = page_rec
            thread_total = int(total)
            thread_items = [_thread(rid, rec) for rec in records if rec is not None]
        windows = []
        for (mid, _, _), recs in zip(plan.windows, windows_rec, strict=True):
            if not recs:
                self._message_at.drop(mid)
                return None
            self._message_at.put(mid, rid)
            windows.append([_message(rid, rec) for rec in recs if rec is not None])
        return ReadParts(threads, resources, message_total, messages, thread_total, thread_items, windows)

    # ------------------------------------------------------------------ resources

    async def _get_resource(self, resource_id: str) -> Resource | None:
        async with self._calls:
            rec = await self._client.hmget(self._slot(resource_id) + "r", ["w", "d", "c", "u"])
        return _stored_resource(resource_id, rec)

    async def _list_resource_ids(self, after: str | None, limit: int | None) -> list[str]:
        # Candidates come from the store slot's index (README: "Resource
        # listing"), each checked in its own slot, which is the truth.
        found: list[str] = []
        lo = "-" if after is None else "(" + after
        while limit is None or len(found) < limit:
            count = _LISTING_CHUNK if limit is None else min(limit - len(found), _LISTING_CHUNK)
            cutoff, flat = await self._run("resources", self._keys.store, [lo, count])
            candidates = list(zip(flat[0::2], flat[1::2], strict=True))
            held = await self._hold_data([rid for rid, _ in candidates])
            stale: list[str] = []  # empty, registered before the lease: (id, stamp) pairs for forget.lua
            for (rid, stamp), live in zip(candidates, held, strict=True):
                if live:
                    found.append(rid)
                elif int(stamp) < int(cutoff):
                    stale += (rid, stamp)
            if stale:
                await self._run("forget", self._keys.store, _counted(stale))
            if len(candidates) < count:
                break
            lo = "(" + candidates[-1][0]
        return found

    async def _hold_data(self, resource_ids: Sequence[str]) -> list[bool]:
        """Whether each resource's slot holds its record or a thread (one
        pipeline: one round trip per node)."""
        if not resource_ids:
            return []
        pipe = self._client.pipeline(transaction=False)
        for rid in resource_ids:
            base = self._slot(rid)
            pipe.exists(base + "r", base + "tc")
        async with self._calls:
            return [bool(count) for count in await pipe.execute()]

    async def _record_write(self, step: str, resource_id: str, args: list[Any]) -> Any:
        """Write a resource's record with script ``step`` (``put_resource`` or
        ``patch_resource``), registered for the listing first: one atomic
        ``solo_record.lua`` call on a standalone server; on a cluster the
        registration in the store slot, then the write in the resource's slot
        (a write dying in between leaves a candidate the listing skips).
        Returns the step's reply."""
        if self._solo:
            return await self._run("solo_record", self._keys.store, [step, resource_id, *args])
        await self._run("register", self._keys.store, [resource_id])
        return await self._run(step, self._slot(resource_id), args)

    async def _put_resource(self, resource: Resource) -> None:
        if resource.created_at is None or resource.updated_at is None:  # pragma: no cover - the core never sends one
            raise ValidationError(
                "resource.created_at", "the core gives a resource to store its times; this one has none", "R-TIME"
            )
        wm = resource.working_memory
        await self._record_write(
            "put_resource",
            resource.id,
            [
                "0" if wm is None else "1",
                wm or "",
                dumps(resource.metadata),
                to_us(resource.created_at),
                to_us(resource.updated_at),
            ],
        )

    async def _patch_resource(
        self, resource_id: str, working_memory: Any, metadata: dict[str, Any] | None, now_us: int
    ) -> Resource:
        if working_memory is NOT_GIVEN:
            mode, text = "-", ""
        elif working_memory is None:
            mode, text = "n", ""
        else:
            mode, text = "s", working_memory
        rec = await self._record_write(
            "patch_resource", resource_id, [now_us, mode, text, *_counted(_members(metadata or {})), "-", ""]
        )
        return _resource(resource_id, rec)

    async def _swap_resource_memory(self, resource_id: str, expected: str | None, value: str, now_us: int) -> bool:
        condition = ("n", "") if expected is None else ("s", expected)
        reply = await self._record_write("patch_resource", resource_id, [now_us, "s", value, 0, *condition])
        return bool(reply != "mismatch")

    async def _delete_resource(self, resource_id: str) -> tuple[list[str], int, bool]:
        """On a standalone server one atomic :meth:`_solo_write` call (every
        thread of the resource deleted as :meth:`_delete_thread` does, then
        its record, its slot's tombstones and its listing entry); on a
        cluster a resumable erasure: every thread through
        :meth:`_delete_thread` (:func:`~memory_core.storage.composed.erase_threads`),
        the record, then the tombstones (erase.lua) and, once the slot holds nothing, the
        listing entry (unlist.lua). Either way no key name or value keeps the
        resource id or its thread ids (issue 25)."""
        if not self._solo:
            thread_ids = [thread.id for thread in await self._list_threads(ThreadQuery(resource_id))]
            messages = await erase_threads(thread_ids, self._delete_thread)
            existed = await self._delete_resource_record(resource_id)
            if await self._run("erase", self._slot(resource_id), []):  # 1: the slot holds nothing
                await self._run("unlist", self._keys.store, [resource_id])
            return thread_ids, messages or 0, existed
        claim = await self._solo_write("delete_resource", self._claim_args(), [(resource_id, [])])
        thread_ids, messages, existed = claim.steps[0]
        for tid in thread_ids:
            self._thread_at.drop(tid)
        return list(thread_ids), int(messages), bool(existed)

    async def _delete_resource_record(self, resource_id: str) -> bool:
        """Delete the resource's record only; True if it existed."""
        async with self._calls:
            deleted: int = await self._client.delete(self._slot(resource_id) + "r")
        return deleted > 0


def _stored_resource(resource_id: str, rec: Sequence[str | None]) -> Resource | None:
    """:func:`_resource`, or None when ``rec`` is of no record (no created time)."""
    _, _, created, _ = rec
    return None if created is None else _resource(resource_id, rec)


def _resource(resource_id: str, rec: Sequence[str | None]) -> Resource:
    """A resource from its record's fields (working memory, metadata, created, updated)."""
    wm, meta, created, updated = rec
    if meta is None or created is None or updated is None:
        raise BackendError("redis", "read", f"resource {resource_id!r}: its record lacks metadata or times")
    return build_resource(resource_id, wm, loads(meta), StoredTime(created), StoredTime(updated))
