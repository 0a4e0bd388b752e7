-- Store slot, last step of a write (or a roll-forward): bring the global
-- thread records and indexes up to date with thread snapshots, newest
-- version wins (so late or reordered applications converge; a deleted
-- thread's version stays in its keyed tombstone for the ttl), release
-- message ids and clear the write's intents.
-- ARGV: tombstone ttl seconds, n, then per snapshot: thread id, resource id,
--       state "l"/"d", version ("" for a thread its slot has no trace of:
--       one past the global version, and only while the resource still
--       holds the id), created key, updated key, last key ("" no message),
--       n, filter field pairs; then n, (message id, resource id) pairs to
--       release; n, (thread id, stamp) and n, (message id, stamp) intents
--       to clear.
local ttl, n = argn(), argn()
for _ = 1, n do
  local tid, rid, state, v, ckey, ukey, lkey = arg(), arg(), arg(), arg(), arg(), arg(), arg()
  local fields = argpairs()
  local g = base .. 'g:' .. tid
  local cur = redis.call('HMGET', g, 'v', 'c', 'u', 'k', 'r')
  local tomb = nil  -- a deleted thread's version is in its tombstone
  if not cur[1] then
    tomb = tombstone_key(tid)
    cur[1] = redis.call('GET', tomb)
  end
  if v == '' then
    v = (cur[5] == rid) and (tonumber(cur[1]) or 0) + 1 or 0
  else
    v = tonumber(v)
  end
  if v > 0 and (not cur[1] or tonumber(cur[1]) < v) then
    if cur[2] then
      redis.call('ZREM', base .. 'tc', cur[2] .. ':' .. tid)
      redis.call('ZREM', base .. 'tu', cur[3] .. ':' .. tid)
      index_last(tid, cur[4] or '', nil)
    end
    redis.call('DEL', g)
    if state == 'd' then
      redis.call('SET', tomb or tombstone_key(tid), fmt(v), 'EX', ttl)
    else
      if tomb then redis.call('DEL', tomb) end
      redis.call('HSET', g, 'v', fmt(v), 'r', rid, 'c', ckey, 'u', ukey)
      if lkey ~= '' then redis.call('HSET', g, 'k', lkey) end
      index_last(tid, nil, lkey)
      hset_pairs(g, fields)
      redis.call('ZADD', base .. 'tc', 0, ckey .. ':' .. tid)
      redis.call('ZADD', base .. 'tu', 0, ukey .. ':' .. tid)
    end
  end
end
local release = argpairs()
for i = 1, #release, 2 do
  if redis.call('HGET', base .. 'msg', release[i]) == release[i + 1] then
    redis.call('HDEL', base .. 'msg', release[i])
  end
end
clear_intents('pt', argpairs())
clear_intents('pm', argpairs())
return 1
