"""Raw redis-py on the Redis adapter's own keys: one Lua script per operation.

The ceiling for ``redis://`` (standalone Redis / Valkey): what a careful
developer writes by hand with redis-py for the same answers on the same
keys and indexes as memory-core-redis (README "Key layout"): a resource's
slot ``{P:R}:`` holds thread hashes ``t:<id>``, message hashes ``m:<id>``
(fields t o y x d c s k, filter fields ``~<key>``), the lexicographic
sorted sets ``tm:<thread>`` (messages of a thread), ``rm`` (of the
resource), ``tc``/``tu`` (its threads); the store slot ``{P}:`` holds the
message directory ``msg``, the sequence ``seq``, global thread records
``g:<id>`` and the global indexes ``tc``/``tu``. Key names and the
sort-key text come from ``memory_core_redis._keys`` so both sides agree;
the thread bump repeats the adapter's ``lua/writes.lua`` (``_BUMP_LUA``, checked
by a test).

Every read is ONE ``EVALSHA`` (ownership check, count and page together).
A save is ONE script too: directory claim, sequence, upserts, thread bumps
and the global thread records, which is possible on a standalone server
(the adapter does the same there; on Redis Cluster it splits a write in
three scripts because the store slot and the resource slot live on
different nodes). On a cluster URL the reads run unchanged through
``RedisCluster`` (each script in one resource's slot) and saves have no
baseline (:class:`RawRedisCluster`).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from memory_core import codec
from memory_core.clock import TIME_MAX_US
from memory_core.errors import AdapterClosedError, ValidationError
from memory_core_redis._keys import Layout, canon, filter_fields, time_key
from memory_core_redis._url import parse_url
from redis.asyncio import Redis, RedisCluster

from memory_core_bench.dataset import BenchMessage, ThreadSpec
from memory_core_bench.subjects import AdapterSubject, Answer, Kind, Subject

__all__ = ["RawRedis", "RawRedisCluster", "make"]

_BUMP_LUA = "math.min(math.max(now, u + 1), TIME_MAX_US)"
"""R-BUMP as the adapter's ``lua/writes.lua`` writes it (a test checks it is there)."""

_LIB = (
    f"local TIME_MAX_US = {TIME_MAX_US}\n"
    + r"""
local function fmt(n) return string.format('%d', n) end
local function tkey(us)
  if us >= 0 then return '1' .. string.format('%016d', us) end
  return '0' .. string.format('%016d', 9000000000000000 + us)
end
local R = KEYS[1]
local function msg(mid)
  local g = redis.call('HMGET', R .. 'm:' .. mid, 't', 'o', 'y', 'x', 'd', 'c', 's')
  if not g[1] then return false end
  return {mid, g[1], g[2], g[3], g[4], g[5], g[6], g[7]}
end
local function rows(members, reverse)
  local out = {}
  if reverse then
    for i = #members, 1, -1 do out[#out + 1] = msg(string.sub(members[i], 40)) end
  else
    for i = 1, #members do out[#out + 1] = msg(string.sub(members[i], 40)) end
  end
  return out
end
"""
)

# ARGV: thread id, n. -> {total, rows oldest first} or false (not in this resource).
_RECALL = (
    _LIB
    + r"""
local tid, n = ARGV[1], tonumber(ARGV[2])
if redis.call('EXISTS', R .. 't:' .. tid) == 0 then return false end
local idx = R .. 'tm:' .. tid
return {redis.call('ZCARD', idx), rows(redis.call('ZREVRANGEBYLEX', idx, '+', '-', 'LIMIT', 0, n), true)}
"""
)

# ARGV: thread id, count lo, count hi, page lo, page hi, offset, limit, field, form ("" = no filter).
# -> {total, rows}. Filtered: one pass over the thread's index.
_PAGE = (
    _LIB
    + r"""
local tid, clo, chi, lo, hi = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local offset, limit, field, form = tonumber(ARGV[6]), tonumber(ARGV[7]), ARGV[8], ARGV[9]
local idx = R .. 'tm:' .. tid
if form == '' then
  return {redis.call('ZLEXCOUNT', idx, clo, chi), rows(redis.call('ZRANGEBYLEX', idx, lo, hi, 'LIMIT', offset, limit))}
end
local total, picked = 0, {}
local cur = clo
while true do
  local r = redis.call('ZRANGEBYLEX', idx, cur, chi, 'LIMIT', 0, 512)
  for _, m in ipairs(r) do
    if redis.call('HGET', R .. 'm:' .. string.sub(m, 40), field) == form then
      total = total + 1
      if total > offset and #picked < limit then picked[#picked + 1] = m end
    end
  end
  if #r < 512 then break end
  cur = '(' .. r[#r]
end
return {total, rows(picked)}
"""
)

# ARGV: thread id, n, before, after, targets... -> {total, newest rows, window rows...} or false.
_INCLUDE = (
    _LIB
    + r"""
local tid, n, before, after = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
if redis.call('EXISTS', R .. 't:' .. tid) == 0 then return false end
local idx = R .. 'tm:' .. tid
local out = {redis.call('ZCARD', idx), rows(redis.call('ZREVRANGEBYLEX', idx, '+', '-', 'LIMIT', 0, n), true)}
for i = 5, #ARGV do
  local g = redis.call('HMGET', R .. 'm:' .. ARGV[i], 't', 'k')
  if g[1] then
    local w = R .. 'tm:' .. g[1]
    local ids = rows(redis.call('ZREVRANGEBYLEX', w, '(' .. g[2], '-', 'LIMIT', 0, before), true)
    ids[#ids + 1] = msg(ARGV[i])
    for _, row in ipairs(rows(redis.call('ZRANGEBYLEX', w, '(' .. g[2], '+', 'LIMIT', 0, after))) do
      ids[#ids + 1] = row
    end
    out[#out + 1] = ids
  end
end
return out
"""
)

# ARGV: offset, limit. -> {total, thread rows newest first}.
_THREADS = (
    _LIB
    + r"""
local offset, limit = tonumber(ARGV[1]), tonumber(ARGV[2])
local out = {}
for _, m in ipairs(redis.call('ZREVRANGEBYLEX', R .. 'tc', '+', '-', 'LIMIT', offset, limit)) do
  local tid = string.sub(m, 19)
  local g = redis.call('HMGET', R .. 't:' .. tid, 'n', 'd', 'c', 'u')
  out[#out + 1] = {tid, g[1], g[2], g[3], g[4]}
end
return {redis.call('ZCARD', R .. 'tc'), out}
"""
)

# KEYS: resource slot base, store slot base.
# ARGV: resource id, now us, n, then per message: id, thread id, role, type, content json,
#       metadata json, created us, created key, n fields, field pairs.
_SAVE = (
    _LIB
    + r"""
local S = KEYS[2]
local rid, now, n = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local msgs, i = {}, 4
for k = 1, n do
  local m = {id = ARGV[i], tid = ARGV[i + 1], role = ARGV[i + 2], type = ARGV[i + 3], x = ARGV[i + 4],
             d = ARGV[i + 5], c = ARGV[i + 6], ck = ARGV[i + 7], fields = {}}
  local nf = tonumber(ARGV[i + 8])
  for f = 1, 2 * nf do m.fields[f] = ARGV[i + 8 + f] end
  i = i + 9 + 2 * nf
  msgs[k] = m
end
local threads, order = {}, {}
for _, m in ipairs(msgs) do
  if not threads[m.tid] then
    if redis.call('EXISTS', R .. 't:' .. m.tid) == 0 then return {'missing', m.tid} end
    threads[m.tid] = true
    order[#order + 1] = m.tid
  end
end
for _, m in ipairs(msgs) do
  local held = redis.call('HGET', S .. 'msg', m.id)
  if held and held ~= rid then return {'conflict', m.id} end
end
local first = redis.call('INCRBY', S .. 'seq', n) - n
for k, m in ipairs(msgs) do
  redis.call('HSET', S .. 'msg', m.id, rid)
  local key = R .. 'm:' .. m.id
  local old = redis.call('HMGET', key, 't', 'c', 's', 'k')
  local c, s = m.c, fmt(first + k)
  local member = m.ck .. ':' .. string.format('%020d', first + k) .. ':' .. m.id
  if old[1] then
    c, s, member = old[2], old[3], old[4]
    if old[1] ~= m.tid then
      redis.call('ZREM', R .. 'tm:' .. old[1], member)
      if not threads[old[1]] then threads[old[1]] = true; order[#order + 1] = old[1] end
    end
    redis.call('DEL', key)
  else
    redis.call('ZADD', R .. 'rm', 0, member)
  end
  redis.call('ZADD', R .. 'tm:' .. m.tid, 0, member)
  redis.call('HSET', key, 't', m.tid, 'o', m.role, 'y', m.type, 'x', m.x, 'd', m.d, 'c', c, 's', s, 'k', member)
  if #m.fields > 0 then redis.call('HSET', key, unpack(m.fields)) end
end
for _, tid in ipairs(order) do
  local key = R .. 't:' .. tid
  local g = redis.call('HMGET', key, 'u', 'v')
  local u = tonumber(g[1])
  local nu, v = math.min(math.max(now, u + 1), TIME_MAX_US), tonumber(g[2]) + 1
  redis.call('ZREM', R .. 'tu', tkey(u) .. ':' .. tid)
  redis.call('ZADD', R .. 'tu', 0, tkey(nu) .. ':' .. tid)
  redis.call('HSET', key, 'u', fmt(nu), 'v', fmt(v))
  local gk = S .. 'g:' .. tid
  local cur = redis.call('HGET', gk, 'u')
  if cur then redis.call('ZREM', S .. 'tu', cur .. ':' .. tid) end
  redis.call('HSET', gk, 'v', fmt(v), 'u', tkey(nu))
  redis.call('ZADD', S .. 'tu', 0, tkey(nu) .. ':' .. tid)
end
return {'ok', fmt(first)}
"""
)


def make(adapter: AdapterSubject) -> RawRedis | None:
    """The raw baseline on ``adapter``'s keys: :class:`RawRedis` on a
    standalone server, :class:`RawRedisCluster` (reads only) on a cluster."""
    prefix = getattr(adapter.storage, "prefix", None)
    if not isinstance(prefix, str):
        return None
    if parse_url(adapter.url).cluster:
        return RawRedisCluster(adapter, prefix)
    return RawRedis(adapter, prefix)


def _decode(rows: Sequence[Any]) -> list[tuple[Any, ...]]:
    """Message rows {id, t, o, y, x, d, c, s} with JSON decoded, ints parsed."""
    return [(r[0], r[1], r[2], r[3], codec.loads(r[4]), codec.loads(r[5]), int(r[6]), int(r[7])) for r in rows if r]


class RawRedis(Subject):
    """redis-py by hand on the adapter's keys (shares its data).

    Args:
        adapter: the adapter subject whose store this reads and writes (its
            ``create_threads`` is reused for untimed setup).
        prefix: the store's key prefix (namespace).
    """

    kind: Kind = "raw"
    shares_data = True

    def __init__(self, adapter: AdapterSubject, prefix: str) -> None:
        self.backend = adapter.backend
        self.label = "redis-py + Lua (raw)"
        self.adapter = adapter
        self.layout = Layout(prefix)
        self._client: Redis | None = None
        self._scripts: dict[str, Any] = {}

    @property
    def client(self) -> Redis:
        """The open client."""
        if self._client is None:
            raise AdapterClosedError("raw Redis baseline: open() first")
        return self._client

    def server_pid(self) -> int | None:
        """The adapter's server."""
        return self.adapter.server_pid()

    def _connect(self) -> Any:
        return Redis.from_url(self.adapter.url, decode_responses=True)

    async def open(self) -> None:
        """Connect (``decode_responses``) and load the scripts."""
        self._client = self._connect()
        for name, text in (
            ("recall", _RECALL),
            ("page", _PAGE),
            ("include", _INCLUDE),
            ("threads", _THREADS),
            ("save", _SAVE),
        ):
            script = self._client.register_script(text)
            await self._client.script_load(text)
            self._scripts[name] = script

    async def close(self) -> None:
        """Disconnect (the adapter deletes the keys)."""
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    async def _run(self, name: str, resource_id: str, args: list[Any], extra_keys: Sequence[str] = ()) -> Any:
        return await self._scripts[name](keys=[self.layout.resource(resource_id), *extra_keys], args=args)

    async def create_threads(self, threads: Sequence[ThreadSpec]) -> None:
        """Untimed setup through the adapter (same records and indexes)."""
        await self.adapter.create_threads(threads)

    def prepare(self, messages: list[BenchMessage]) -> list[BenchMessage]:
        """Unchanged (encoding is part of the timed work)."""
        return messages

    async def save(self, prepared: Any) -> None:
        """One script per resource of the batch (one for every batch here)."""
        messages: list[BenchMessage] = prepared
        by_resource: dict[str, list[BenchMessage]] = {}
        for m in messages:
            by_resource.setdefault(m.resource_id, []).append(m)
        now = time.time_ns() // 1000
        for resource_id, batch in by_resource.items():
            args: list[Any] = [resource_id, now, len(batch)]
            for m in batch:
                fields = filter_fields(m.metadata)
                args += (
                    m.id,
                    m.thread_id,
                    m.role,
                    "v2",
                    codec.dumps(m.content),
                    codec.dumps(m.metadata),
                    m.created_at_us,
                    time_key(m.created_at_us),
                    len(fields) // 2,
                    *fields,
                )
            reply = await self._run("save", resource_id, args, [self.layout.store])
            if reply[0] != "ok":
                raise LookupError(f"raw save refused: {reply}")

    async def recall_newest(self, thread: ThreadSpec, n: int) -> Answer:
        """Ownership + count + newest ``n`` (oldest first) in one script."""
        reply = await self._run("recall", thread.resource_id, [thread.id, n])
        if not reply:
            raise PermissionError("thread not in this resource")
        return Answer(int(reply[0]), tuple(r[0] for r in _decode(reply[1])))

    async def _page(
        self,
        thread: ThreadSpec,
        count_range: tuple[str, str],
        page_range: tuple[str, str],
        offset: int,
        limit: int,
        field: str = "",
        form: str = "",
    ) -> Answer:
        reply = await self._run(
            "page", thread.resource_id, [thread.id, *count_range, *page_range, offset, limit, field, form]
        )
        return Answer(int(reply[0]), tuple(r[0] for r in _decode(reply[1])))

    async def page_offset(self, thread: ThreadSpec, page: int, per_page: int) -> Answer:
        """ZLEXCOUNT + ZRANGEBYLEX ... LIMIT offset in one script."""
        return await self._page(thread, ("-", "+"), ("-", "+"), page * per_page, per_page)

    async def first_cursor(self, thread: ThreadSpec, per_page: int, depth: int) -> Any:
        """The index member at position ``depth - 1`` (the keyset position)."""
        if depth <= 0:
            return None
        members = await self.client.zrange(
            self.layout.resource(thread.resource_id) + "tm:" + thread.id, depth - 1, depth - 1
        )
        return str(members[0])

    async def page_cursor(self, thread: ThreadSpec, cursor: Any, per_page: int) -> Answer:
        """Count + the members after the cursor (one extra for has_more)."""
        if cursor is None:
            return await self._page(thread, ("-", "+"), ("-", "+"), 0, per_page)
        answer = await self._page(thread, ("-", "+"), ("(" + cursor, "+"), 0, per_page + 1)
        return Answer(answer.total, answer.ids[:per_page])

    async def filter_meta(self, thread: ThreadSpec, key: str, value: str, per_page: int) -> Answer:
        """One pass over the thread's index comparing the ``~key`` field."""
        form = canon(value)
        if form is None:
            raise ValidationError("value", f"{value!r} has no canonical form", "R-META")
        return await self._page(thread, ("-", "+"), ("-", "+"), 0, per_page, "~" + key, form)

    async def filter_date(self, thread: ThreadSpec, start_us: int, end_us: int, per_page: int) -> Answer:
        """Lex bounds on the created_at text: count and page."""
        bounds = ("[" + time_key(start_us), "(" + time_key(end_us + 1))
        return await self._page(thread, bounds, bounds, 0, per_page)

    async def include_windows(
        self, thread: ThreadSpec, targets: Sequence[str], before: int, after: int, n: int
    ) -> Answer:
        """Newest ``n``, count and every window (in the resource) in one
        script; merged and sorted here."""
        reply = await self._run("include", thread.resource_id, [thread.id, n, before, after, *targets])
        if not reply:
            raise PermissionError("thread not in this resource")
        merged: dict[str, tuple[Any, ...]] = {}
        for part in reply[1:]:
            for row in _decode(part):
                merged.setdefault(row[0], row)
        items = sorted(merged.values(), key=lambda r: (r[6], r[7]))
        return Answer(int(reply[0]), tuple(r[0] for r in items))

    async def list_threads(self, resource_id: str, page: int, per_page: int) -> Answer:
        """ZCARD + ZREVRANGEBYLEX of the resource's ``tc`` + records."""
        reply = await self._run("threads", resource_id, [page * per_page, per_page])
        rows = [(r[0], r[1], codec.loads(r[2]), int(r[3]), int(r[4])) for r in reply[1]]
        return Answer(int(reply[0]), tuple(r[0] for r in rows))


class RawRedisCluster(RawRedis):
    """The same read scripts on Redis Cluster (``RedisCluster``, each read in
    its resource's slot, one ``EVALSHA``). No saves: the one-script save
    touches the store slot and the resource slot together, which a cluster
    refuses, and a hand-written split would not be the crash-safe write the
    adapter does (so save workloads run without a raw baseline there)."""

    ops = frozenset(RawRedis.ops - {"save"})

    def __init__(self, adapter: AdapterSubject, prefix: str) -> None:
        super().__init__(adapter, prefix)
        self.label = "redis-py cluster + Lua (raw)"

    def _connect(self) -> Any:
        return RedisCluster.from_url(parse_url(self.adapter.url).driver_url, decode_responses=True)
