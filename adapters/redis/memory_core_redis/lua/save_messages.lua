-- Upsert a batch of messages of this resource, then bump threads; atomic.
-- ARGV: now us, n, then per message: id, thread id, role, type, content
--       json, metadata json, created us, member ("" for an id the core read
--       as stored), sequence, n, filter field pairs; then n, thread ids to bump.
-- Returns {"ok", {snapshots}}, or {"stale", id} when a thread is missing or
-- an id's stored/new state is not what the core read (nothing written).
local now, n = argn(), argn()
local batch = {}
for i = 1, n do
  batch[i] = {id = arg(), tid = arg(), role = arg(), type = arg(), content = arg(),
              meta = arg(), c = arg(), member = arg(), seq = arg()}
  batch[i].fields = argpairs()
end
local bumps = arglist(argn())
local seen = {}
for _, m in ipairs(batch) do
  if not seen[m.tid] then
    if redis.call('EXISTS', base .. 't:' .. m.tid) == 0 then return {'stale', m.tid} end
    seen[m.tid] = true
  end
  if (redis.call('EXISTS', base .. 'm:' .. m.id) == 1) ~= (m.member == '') then return {'stale', m.id} end
end
for _, m in ipairs(batch) do
  local key = base .. 'm:' .. m.id
  local old = redis.call('HMGET', key, 't', 'c', 's', 'k')
  local c, s, member = m.c, m.seq, m.member
  if old[1] then
    c, s, member = old[2], old[3], old[4]
    if old[1] ~= m.tid then redis.call('ZREM', base .. 'tm:' .. old[1], member) end
    redis.call('DEL', key)
  else
    redis.call('ZADD', base .. 'rm', 0, member)
  end
  redis.call('ZADD', base .. 'tm:' .. m.tid, 0, member)
  redis.call('HSET', key, 't', m.tid, 'o', m.role, 'y', m.type, 'x', m.content, 'd', m.meta,
             'c', c, 's', s, 'k', member)
  hset_pairs(key, m.fields)
end
return {'ok', bump_all(bumps, now)}
