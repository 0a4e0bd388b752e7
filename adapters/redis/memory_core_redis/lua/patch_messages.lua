-- Partial updates of messages of this resource, then bumps; atomic.
-- ARGV: now us, n, then per patch: id, role ("" keep), has type "1"/"0",
--       type, content mode ("-" keep, "s" replace by the json text, "o"
--       merge object members), content text, n, content member pairs,
--       n, metadata member pairs, n, filter field ops, new thread id ("" keep);
--       then n, thread ids to bump. Vanished ids are skipped.
-- Returns {"ok", {snapshots}, {records of the patched messages, as stored}},
-- or {"stale", thread id, "thread"} when a move target is not a thread of
-- this resource, {"stale", message id, "message"} when a message is in a
-- thread not to bump (it moved since the core read it): nothing written.
-- A dry run (writes.lua's `checking`) returns {"ok"} after the checks.
local now, n = argn(), argn()
local patches = {}
for i = 1, n do
  local p = {id = arg(), role = arg(), has_type = arg() == '1', type = arg(), mode = arg(), text = arg()}
  p.content = argpairs()
  p.meta = argpairs()
  p.ops = argpairs()
  p.tid = arg()
  patches[i] = p
end
local bumps = arglist(argn())
local ids = {}
for i, p in ipairs(patches) do ids[i] = p.id end
local away, where = moved(ids, bumps)
if away then return {'stale', away, 'message'} end
for _, p in ipairs(patches) do
  if p.tid ~= '' and where[p.id]
     and redis.call('EXISTS', base .. 't:' .. p.tid) == 0 then
    return {'stale', p.tid, 'thread'}
  end
end
if checking then return {'ok'} end
local records = {}
for _, p in ipairs(patches) do
  local key = base .. 'm:' .. p.id
  local g = redis.call('HMGET', key, 't', 'x', 'd', 'k')
  local move = p.tid ~= '' and p.tid ~= g[1]
  if g[1] then
    if p.role ~= '' then redis.call('HSET', key, 'o', p.role) end
    if p.has_type then redis.call('HSET', key, 'y', p.type) end
    if p.mode == 's' then
      redis.call('HSET', key, 'x', p.text)
    elseif p.mode == 'o' then
      local content = g[2]
      if string.byte(content) ~= 123 then content = '{}' end
      redis.call('HSET', key, 'x', merge(content, p.content))
    end
    if #p.meta > 0 then redis.call('HSET', key, 'd', merge(g[3], p.meta)) end
    set_fields(key, p.ops)
    if move then
      redis.call('ZREM', base .. 'tm:' .. g[1], g[4])
      redis.call('ZADD', base .. 'tm:' .. p.tid, 0, g[4])
      redis.call('HSET', key, 't', p.tid)
    end
    records[#records + 1] = message(p.id)
  end
end
return {'ok', bump_all(bumps, now), records}
