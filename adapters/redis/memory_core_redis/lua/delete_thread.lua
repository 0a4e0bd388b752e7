-- Delete a thread and every message in it, leaving a tombstone "x:<id>"
-- (its deletion's version) for ttl seconds, listed in "xs" (scored by its
-- expiry, ms) so that erasing the resource removes every one (erase.lua).
-- ARGV: id, ttl.
-- Returns {version of the deletion, {message ids}} or nil if missing.
local tid, ttl = arg(), arg()
local key = base .. 't:' .. tid
local g = redis.call('HMGET', key, 'c', 'u', 'v', 'k')
if not g[1] then return false end
local index = base .. 'tm:' .. tid
local members = redis.call('ZRANGE', index, 0, -1)
local ids = {}
for i, m in ipairs(members) do
  ids[i] = member_id(m)
  redis.call('DEL', base .. 'm:' .. ids[i])
end
for i = 1, #members, 500 do
  redis.call('ZREM', base .. 'rm', unpack(members, i, math.min(i + 499, #members)))
end
redis.call('DEL', index, key)
redis.call('ZREM', base .. 'tc', tkey(tonumber(g[1])) .. ':' .. tid)
redis.call('ZREM', base .. 'tu', tkey(tonumber(g[2])) .. ':' .. tid)
index_last(tid, g[4] or '', nil)
local v = fmt(tonumber(g[3]) + 1)
redis.call('SET', base .. 'x:' .. tid, v, 'EX', ttl)
local now = server_ms()
redis.call('ZREMRANGEBYSCORE', base .. 'xs', '-inf', fmt(now))
redis.call('ZADD', base .. 'xs', fmt(now + 1000 * tonumber(ttl)), tid)
return {v, ids}
