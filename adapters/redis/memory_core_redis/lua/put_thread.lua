-- Insert or wholly replace a thread (its messages are kept).
-- ARGV: mode ("new": only insert, "any": insert or replace), id, version
--       floor, title, metadata json, created us, updated us, n, filter field
--       pairs. Returns the thread's snapshot (see writes.lua), or "exists" (mode
--       "new", nothing written).
-- A replaced thread keeps last_message_at ("l", "k"); a new one has none.
local mode, tid, floor, title, meta, c, u = arg(), arg(), argn(), arg(), arg(), arg(), arg()
local fields = argpairs()
local key = base .. 't:' .. tid
local old = redis.call('HMGET', key, 'c', 'u', 'v', 'l', 'k')
if mode == 'new' and old[1] then return 'exists' end
-- above a deletion's tombstone, so a late roll-forward of it loses
local v = math.max(floor, (tonumber(redis.call('GET', base .. 'x:' .. tid)) or 0) + 1)
redis.call('DEL', base .. 'x:' .. tid)
redis.call('ZREM', base .. 'xs', tid)
if old[1] then
  redis.call('ZREM', base .. 'tc', tkey(tonumber(old[1])) .. ':' .. tid)
  redis.call('ZREM', base .. 'tu', tkey(tonumber(old[2])) .. ':' .. tid)
  v = math.max(v, tonumber(old[3]) + 1)
  redis.call('DEL', key)
else
  index_last(tid, nil, '')
end
redis.call('HSET', key, 'n', title, 'd', meta, 'c', c, 'u', u, 'v', fmt(v))
-- a replaced thread keeps its messages, so its last_message_at too
if old[4] then redis.call('HSET', key, 'l', old[4], 'k', old[5]) end
hset_pairs(key, fields)
redis.call('ZADD', base .. 'tc', 0, tkey(tonumber(c)) .. ':' .. tid)
redis.call('ZADD', base .. 'tu', 0, tkey(tonumber(u)) .. ':' .. tid)
return snapshot(tid)
