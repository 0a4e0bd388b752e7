"""``RedisStorage``: memory-core on Redis / Valkey, standalone or Cluster.

Every primitive is answered server-side by one Lua script per hash slot
(sorted-set range queries, filters evaluated in Lua), so a read is one round
trip once the location of its ids is known. README.md documents the key
layout, the hash-tag scheme, which writes touch two slots and how they stay
correct, and where costs grow linearly.
"""

from __future__ import annotations

import asyncio
import inspect
from collections import defaultdict
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any, ClassVar, TypeVar

from memory_core.capabilities import Capability
from memory_core.clock import Clock, from_us, to_us
from memory_core.codec import dumps, loads
from memory_core.errors import StaleStateError, ValidationError
from memory_core.models import Message, Resource, Thread
from memory_core.query import NOT_GIVEN, MessagePatch, MessageQuery, MetaCondition, ThreadQuery
from memory_core.storage import BaseStorage, message_key
from redis import exceptions as redis_errors
from redis.asyncio import BlockingConnectionPool, Redis
from redis.asyncio.cluster import RedisCluster
from redis.asyncio.connection import Connection, ConnectionPool, SSLConnection, UnixDomainSocketConnection

from memory_core_redis._keys import Layout, canon, filter_fields, message_member, seq_text, thread_member, time_key
from memory_core_redis._scripts import Scripts
from memory_core_redis._url import DEFAULT_PREFIX, parse_url

__all__ = ["RedisStorage"]

T = TypeVar("T")

TOMBSTONE_TTL = 86_400
"""Seconds a deleted thread's version is remembered in the store slot, so a
late, reordered update of the global index cannot resurrect it."""

_CACHE_SIZE = 65_536
_CONCURRENT_CALLS = 50
"""Script calls one store runs at once (the ``max_connections`` option when
given): redis-py's cluster client has no blocking pool and fails past its
per-node limit, so the store queues its own calls instead."""
_MAX_WINDOW = 2**50
"""Offsets and limits are clamped to this before they reach Lua (whose
numbers are doubles): no store holds that many items, so answers are equal."""
_RELEASE_CHUNK = 10_000
_RETRYABLE = (
    redis_errors.ConnectionError,  # includes BusyLoadingError
    redis_errors.TimeoutError,
    redis_errors.ClusterDownError,
    redis_errors.TryAgainError,
    redis_errors.ReadOnlyError,
    redis_errors.MasterDownError,
)

Snapshot = tuple[str, str, str, str, str, str, str, list[str]]
"""(thread id, resource id, state "l"/"d", version, created key, updated key,
last-message key or "", filter field pairs): what the store slot learns
about a changed thread."""


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
        assert form is not None
        out += ("~" + c.key, form)
    return out


def _thread(resource_id: str, rec: Sequence[str]) -> Thread:
    tid, title, meta, created, updated, last = rec
    return Thread(
        tid,
        resource_id,
        title,
        loads(meta),
        from_us(int(created)),
        from_us(int(updated)),
        from_us(int(last)) if last else None,
    )


def _message(resource_id: str, rec: Sequence[Any]) -> Message:
    mid, tid, role, kind, content, meta, created, seq = rec
    return Message(
        mid,
        tid,
        role,  # type: ignore[arg-type]  # a stored role is always one of ROLES
        loads(content),
        resource_id,
        kind,
        loads(meta),
        from_us(int(created)),
        int(seq),
    )


def _snapshot(resource_id: str, lua: Sequence[str]) -> Snapshot:
    tid, state, version, ckey, ukey, lkey, *fields = lua
    return (tid, resource_id, state, version, ckey, ukey, lkey, list(fields))


def _message_bounds(query: MessageQuery) -> tuple[str, str]:
    """ZRANGEBYLEX (min, max) of a message query: dates and keyset position."""
    lo = "-" if query.created_from_us is None else "[" + time_key(query.created_from_us)
    hi = "+" if query.created_to_us is None else "(" + time_key(query.created_to_us + 1)
    if query.after is not None:
        created, seq = query.after
        if query.descending:
            edge = "(" + time_key(created) + ":" + seq_text(seq)
            hi = edge if hi == "+" else min(hi, edge)
        else:
            edge = "[" + time_key(created) + ":" + seq_text(seq + 1)
            lo = edge if lo == "-" else max(lo, edge)
    return lo, hi


def _thread_bounds(query: ThreadQuery) -> tuple[str, str]:
    if query.after is None:
        return "-", "+"
    edge = "(" + thread_member(*query.after)
    return ("-", edge) if query.descending else (edge, "+")


def _driver_options() -> frozenset[str]:
    """Every keyword redis-py's clients, pools and connections take: what
    ``**client_options`` may hold."""
    names: set[str] = set()
    for target in (Redis, RedisCluster, ConnectionPool, BlockingConnectionPool):
        names.update(inspect.signature(target.__init__).parameters)
    for connection in (Connection, SSLConnection, UnixDomainSocketConnection):
        names.update(inspect.signature(connection.__init__).parameters)
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
            with ``decode_responses=True``; it is not closed by ``close()``.
        cluster: force Cluster (True) or standalone (False) client; default
            from the URL.
        clock: injectable clock (see :class:`~memory_core.storage.BaseStorage`).
        **client_options: extra keyword arguments for redis-py's ``from_url``
            (``socket_timeout`` in seconds, ``max_connections`` …).

    Raises:
        ValidationError: a bad URL or an empty prefix.
    """

    backend_name: ClassVar[str] = "redis"
    capabilities = frozenset({Capability.PERSISTENT, Capability.SHARED_NAMESPACE})

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
        for name in client_options:
            # Caught here, before any I/O: redis-py would only fail on connect.
            if name not in _DRIVER_OPTIONS:
                raise ValidationError(
                    f"option {name!r}", "not an option of the redis adapter or of redis-py (a misspelling?)"
                )
        target = parse_url(url)
        chosen = prefix if prefix is not None else target.prefix or DEFAULT_PREFIX
        if not isinstance(chosen, str) or not chosen:
            raise ValidationError("prefix", "must be a non-empty str")
        self.prefix = chosen
        self._target = target
        self._cluster = target.cluster if cluster is None else cluster
        self._client_options = client_options
        self._calls = asyncio.Semaphore(int(client_options.get("max_connections", _CONCURRENT_CALLS)))
        self._client: Any = client
        self._owns_client = client is None
        self._scripts: Scripts | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._keys = Layout(chosen)
        self._thread_at = _Locations()
        self._message_at = _Locations()

    @classmethod
    def from_url(
        cls, url: str, *, clock: Clock | None = None, namespace: str | None = None, **options: Any
    ) -> RedisStorage:
        """Build from a URL (see the class). ``namespace``, when given, is the
        key prefix; other options are the constructor's keyword arguments."""
        if namespace is not None:
            options["prefix"] = namespace
        return cls(url, clock=clock, **options)

    def is_retryable(self, exc: Exception) -> bool:
        """Connection errors, timeouts, cluster reconfiguration and failover
        (read-only replica, master down) are transient."""
        return isinstance(exc, _RETRYABLE) or super().is_retryable(exc)

    @property
    def client(self) -> Any:
        """The redis-py client (after ``open()``)."""
        return self._client

    # ------------------------------------------------------------------ lifecycle

    async def _ready(self) -> None:
        """Open if needed, and follow the caller's event loop: redis-py's
        connections belong to the loop that made them, so a store used from a
        new loop (``asyncio.run`` per call, as sync frameworks call async
        code) makes a new client there. A client passed in cannot be remade:
        then a clear ValidationError."""
        await super()._ready()
        loop = asyncio.get_running_loop()
        if loop is not self._loop:
            await self._rebind(loop)

    async def _rebind(self, loop: asyncio.AbstractEventLoop) -> None:
        if not self._owns_client:
            raise ValidationError(
                "client",
                "the redis client given to this store belongs to another event loop; redis-py connections "
                "cannot move between loops: create the client (or let the store create it) in this loop",
            )
        # The old loop is gone (or busy elsewhere): its connections cannot be
        # closed from here; drop them and connect again in this loop.
        self._client = None
        self._calls = asyncio.Semaphore(int(self._client_options.get("max_connections", _CONCURRENT_CALLS)))
        await self._open()

    async def _open(self) -> None:
        self._loop = asyncio.get_running_loop()
        if self._client is None:
            url, options = self._target.driver_url, self._client_options
            if self._cluster:
                self._client = RedisCluster.from_url(url, decode_responses=True, **options)
            else:
                # A blocking pool: past max_connections (default 50) a call waits
                # for a free connection instead of failing with
                # MaxConnectionsError under bursts of concurrent recalls.
                pool = BlockingConnectionPool.from_url(url, decode_responses=True, **options)
                self._client = Redis.from_pool(pool)
        if not self._client.get_encoder().decode_responses:
            raise ValidationError("client", "must be created with decode_responses=True")
        self._scripts = Scripts(self._client)
        await self._scripts.load()

    async def _close(self) -> None:
        if self._owns_client and self._client is not None:
            if asyncio.get_running_loop() is not self._loop:
                return  # its connections belong to another (closed) loop: nothing to close from here
            await self._client.aclose()

    async def _destroy(self) -> None:
        batch: list[str] = []
        async for key in self._client.scan_iter(match=self._keys.pattern, count=1000):
            batch.append(key)
            if len(batch) >= 500:
                await self._client.unlink(*batch)
                batch = []
        if batch:
            await self._client.unlink(*batch)

    # ------------------------------------------------------------------ plumbing

    def _slot(self, resource_id: str) -> str:
        return self._keys.resource(resource_id)

    async def _run(self, name: str, base: str, args: list[Any]) -> Any:
        assert self._scripts is not None
        async with self._calls:
            return await self._scripts.run(name, base, args)

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

    async def _apply(self, snapshots: Sequence[Snapshot], release: Sequence[tuple[str, str]] = ()) -> None:
        """Last step of a write (README: "apply"): update the store slot's thread records and
        indexes from snapshots and release deleted message ids."""
        flat_release = [part for pair in release for part in pair]
        args: list[Any] = [TOMBSTONE_TTL, len(snapshots)]
        for tid, rid, state, version, ckey, ukey, lkey, fields in snapshots:
            args += (tid, rid, state, version, ckey, ukey, lkey, *_counted(fields))
        first, rest = flat_release[: 2 * _RELEASE_CHUNK], flat_release[2 * _RELEASE_CHUNK :]
        await self._run("apply", self._keys.store, [*args, *_counted(first)])
        for start in range(0, len(rest), 2 * _RELEASE_CHUNK):
            chunk = rest[start : start + 2 * _RELEASE_CHUNK]
            await self._run("apply", self._keys.store, [TOMBSTONE_TTL, 0, *_counted(chunk)])

    async def _gather(self, calls: Iterable[Awaitable[T]]) -> list[T]:
        return list(await asyncio.gather(*calls))

    # ------------------------------------------------------------------ threads

    async def _get_thread(self, thread_id: str) -> Thread | None:
        async def read(rid: str) -> Thread | None:
            rec = (await self._run("get_threads", self._slot(rid), [thread_id]))[0]
            return None if rec is None else _thread(rid, rec)

        return await self._on_thread(thread_id, read)

    async def _put_thread(self, thread: Thread) -> None:
        await self._write_thread(thread, "any")

    async def _insert_thread(self, thread: Thread) -> None:
        await self._write_thread(thread, "new")

    async def _write_thread(self, thread: Thread, mode: str) -> None:
        """Claim the id for the resource, then write the thread ("new": only
        if absent, atomically in the resource slot) and its index entries."""
        assert thread.created_at is not None and thread.updated_at is not None
        rid = thread.resource_id
        reply = await self._run("claim", self._keys.store, [0, 1, thread.id, rid, 0])
        if reply[0] == "conflict":
            raise StaleStateError(f"thread {thread.id!r} belongs to resource {reply[3]!r}, not {rid!r}")
        floors = reply[2]
        fields = filter_fields(thread.metadata)
        created, updated = to_us(thread.created_at), to_us(thread.updated_at)
        snap = await self._run(
            "put_thread",
            self._slot(rid),
            [mode, thread.id, floors[0], thread.title, dumps(thread.metadata), created, updated, *_counted(fields)],
        )
        if snap == "exists":
            raise StaleStateError(f"thread {thread.id!r} exists")
        self._thread_at.put(thread.id, rid)
        await self._apply([_snapshot(rid, snap)])

    async def _patch_thread(
        self, thread_id: str, title: str | None, metadata: dict[str, Any] | None, now_us: int
    ) -> Thread | None:
        found = await self._conditional_thread_patch(thread_id, title, metadata, now_us, ("-", ""))
        return found if isinstance(found, Thread) else None

    async def _swap_thread_memory(self, thread_id: str, expected: str | None, value: str, now_us: int) -> bool | None:
        condition = ("n", "") if expected is None else ("s", dumps(expected))
        found = await self._conditional_thread_patch(thread_id, None, {"working_memory": value}, now_us, condition)
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

        async def update(rid: str) -> tuple[str, Any] | None:
            got = await self._run("patch_thread", self._slot(rid), args)
            return None if got is None else (rid, got)

        found = await self._on_thread(thread_id, update)
        if found is None:
            return None
        rid, reply = found
        if reply == "mismatch":
            return "mismatch"
        rec, snap = reply
        await self._apply([_snapshot(rid, snap)])
        return _thread(rid, rec)

    async def _delete_thread(self, thread_id: str) -> None:
        async def delete(rid: str) -> tuple[str, Any] | None:
            got = await self._run("delete_thread", self._slot(rid), [thread_id])
            return None if got is None else (rid, got)

        found = await self._on_thread(thread_id, delete)
        self._thread_at.drop(thread_id)
        if found is None:
            return
        rid, (version, ids) = found
        for mid in ids:
            self._message_at.drop(mid)
        await self._apply([(thread_id, rid, "d", version, "", "", "", [])], [(mid, rid) for mid in ids])

    async def _threads(self, mode: str, query: ThreadQuery) -> Any:
        if query.order_field == "last_message_at":
            index = "tld" if query.descending else "tla"
        else:
            index = "tc" if query.order_field == "created_at" else "tu"
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
        return await self._run("threads", base, args)

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

    async def _save_messages(self, messages: Sequence[Message], bump: Sequence[str], now_us: int) -> list[int]:
        claims = [part for m in messages for part in (m.id, m.resource_id or "")]
        reply = await self._run("claim", self._keys.store, [len(messages), 0, *_counted(claims)])
        if reply[0] == "conflict":
            raise StaleStateError(f"message {reply[2]!r} is stored under resource {reply[3]!r}")
        first = int(reply[1])
        groups: dict[str, list[Any]] = defaultdict(list)
        sequences = []
        for index, m in enumerate(messages):
            assert m.resource_id is not None and m.created_at is not None
            seq = first + index + 1 if m.sequence is None else m.sequence
            sequences.append(seq)
            created = to_us(m.created_at)
            member = message_member(created, seq, m.id) if m.sequence is None else ""
            groups[m.resource_id].append(
                (
                    m.id,
                    m.thread_id,
                    m.role,
                    m.type,
                    dumps(m.content),
                    dumps(m.metadata),
                    created,
                    member,
                    seq,
                    *_counted(filter_fields(m.metadata)),
                )
            )
        replies = await self._gather(
            self._run(
                "save_messages",
                self._slot(rid),
                [now_us, len(batch), *(part for row in batch for part in row), len(bump), *bump],
            )
            for rid, batch in groups.items()
        )
        snapshots: list[Snapshot] = []
        stale: str | None = None
        for rid, (status, payload) in zip(groups, replies, strict=True):
            if status == "stale":
                stale = payload
                continue
            snapshots += (_snapshot(rid, s) for s in payload)
            for row in groups[rid]:
                self._message_at.put(row[0], rid)
        if snapshots:
            await self._apply(snapshots)
        if stale is not None:
            raise StaleStateError(f"{stale!r} changed while saving")
        return sequences

    async def _patch_messages(self, patches: Sequence[MessagePatch], bump: Sequence[str], now_us: int) -> None:
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
            calls.append((rid, self._run("patch_messages", self._slot(rid), [*args, len(bump), *bump])))
        replies = await self._gather(call for _, call in calls)
        snapshots: list[Snapshot] = []
        stale: str | None = None
        for (rid, _), (status, payload) in zip(calls, replies, strict=True):
            if status == "stale":
                stale = payload
                continue
            snapshots += (_snapshot(rid, s) for s in payload)
        if snapshots:
            await self._apply(snapshots)
        if stale is not None:
            raise StaleStateError(f"thread {stale!r} changed while updating")

    async def _delete_messages(self, ids: Sequence[str], bump: Sequence[str], now_us: int) -> int:
        groups, _ = await self._group(list(dict.fromkeys(ids)), self._message_at, threads=False, fresh=False)
        replies = await self._gather(
            self._run("delete_messages", self._slot(rid), [len(mids), *mids, len(bump), *bump, now_us])
            for rid, mids in groups.items()
        )
        snapshots: list[Snapshot] = []
        release: list[tuple[str, str]] = []
        for rid, (deleted, snaps) in zip(groups, replies, strict=True):
            snapshots += (_snapshot(rid, s) for s in snaps)
            release += ((mid, rid) for mid in deleted)
            for mid in deleted:
                self._message_at.drop(mid)
        if snapshots or release:
            await self._apply(snapshots, release)
        return len(release)

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
            assert query.resource_id is not None
            tids = [] if query.thread_ids is None else list(dict.fromkeys(query.thread_ids))
            args = [*head(offset, limit), len(tids), *tids]
            reply = await self._run("messages", self._slot(query.resource_id), args)
            return [(query.resource_id, reply[0])]
        tids = list(dict.fromkeys(query.thread_ids))
        for fresh in (False, True):
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
        raise AssertionError("unreachable")

    async def _list_messages(self, query: MessageQuery) -> list[Message]:
        parts = await self._messages("l", query)
        found = [_message(rid, rec) for rid, recs in parts for rec in recs if rec is not None]
        if len(parts) == 1:
            return found
        found.sort(key=message_key, reverse=query.descending)
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

    # ------------------------------------------------------------------ resources

    async def _get_resource(self, resource_id: str) -> Resource | None:
        rec = await self._client.hmget(self._slot(resource_id) + "r", ["w", "d", "c", "u"])
        return None if rec[2] is None else _resource(resource_id, rec)

    async def _put_resource(self, resource: Resource) -> None:
        assert resource.created_at is not None and resource.updated_at is not None
        wm = resource.working_memory
        await self._run(
            "put_resource",
            self._slot(resource.id),
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
        rec = await self._run(
            "patch_resource",
            self._slot(resource_id),
            [now_us, mode, text, *_counted(_members(metadata or {})), "-", ""],
        )
        return _resource(resource_id, rec)

    async def _swap_resource_memory(self, resource_id: str, expected: str | None, value: str, now_us: int) -> bool:
        condition = ("n", "") if expected is None else ("s", expected)
        reply = await self._run("patch_resource", self._slot(resource_id), [now_us, "s", value, 0, *condition])
        return bool(reply != "mismatch")

    async def _delete_resource_record(self, resource_id: str) -> bool:
        deleted: int = await self._client.delete(self._slot(resource_id) + "r")
        return deleted > 0


def _resource(resource_id: str, rec: Sequence[str | None]) -> Resource:
    wm, meta, created, updated = rec
    assert meta is not None and created is not None and updated is not None
    return Resource(resource_id, wm, loads(meta), from_us(int(created)), from_us(int(updated)))
