-- Upsert a batch of messages of this resource, then bump threads; atomic.
-- ARGV: now us, first sequence - 1 (from the claim), n, then per message:
--       id, thread id, role, type, content json, metadata json, created us,
--       "" for an id the core read as stored (else "*"), sequence (a new
--       message: its offset after the first), n, filter field pairs; then n,
--       thread ids to bump.
-- Returns {"ok", {snapshots}}, or {"stale", id, {ids of the new messages}}
-- when a thread is missing, an id's stored/new state is not what the core
-- read, or a stored message is in a thread not to bump (it moved since the
-- read): nothing written. A dry run (writes.lua's `checking`) returns
-- {"ok", {}, {ids of the new messages}} after the checks.
local now, first, n = argn(), argn(), argn()
local batch = {}
for i = 1, n do
  batch[i] = {id = arg(), tid = arg(), role = arg(), type = arg(), content = arg(),
              meta = arg(), c = arg(), member = arg(), seq = arg()}
  batch[i].fields = argpairs()
  if batch[i].member ~= '' then
    batch[i].seq = fmt(first + tonumber(batch[i].seq))
    batch[i].member = tkey(tonumber(batch[i].c)) .. ':' .. string.format('%020d', batch[i].seq) .. ':' .. batch[i].id
  end
end
local function new_ids()
  local new = {}
  for _, m in ipairs(batch) do
    if m.member ~= '' and redis.call('EXISTS', base .. 'm:' .. m.id) == 0 then new[#new + 1] = m.id end
  end
  return new
end
local function stale(id) return {'stale', id, new_ids()} end
local bumps = arglist(argn())
local ids = {}
for i, m in ipairs(batch) do ids[i] = m.id end
local away, where = moved(ids, bumps)
local seen = {}
for _, m in ipairs(batch) do
  if not seen[m.tid] then
    if redis.call('EXISTS', base .. 't:' .. m.tid) == 0 then return stale(m.tid) end
    seen[m.tid] = true
  end
  if (where[m.id] ~= false) ~= (m.member == '') then return stale(m.id) end
end
if away then return stale(away) end
if checking then return {'ok', {}, new_ids()} end
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
