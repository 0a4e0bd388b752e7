-- Delete messages of this resource, then bump, of the threads to bump, those
-- that held a deleted message; atomic.
-- ARGV: n, message ids, n, thread ids to bump, now us.
-- Returns {{deleted ids}, {snapshots}}, or {"stale", message id} when a
-- message is in a thread not to bump (it moved since the core read it):
-- nothing written. A dry run (writes.lua's `checking`) returns {"ok"} after
-- the checks.
local ids = arglist(argn())
local bumps = arglist(argn())
local now = argn()
local wanted, stored = {}, {}
for _, tid in ipairs(bumps) do wanted[tid] = true end
for i, mid in ipairs(ids) do
  stored[i] = redis.call('HMGET', base .. 'm:' .. mid, 't', 'k')
  if stored[i][1] and not wanted[stored[i][1]] then return {'stale', mid} end
end
if checking then return {'ok'} end
local deleted, touched = {}, {}
for i, mid in ipairs(ids) do
  local key, g = base .. 'm:' .. mid, stored[i]
  if g[1] then
    redis.call('ZREM', base .. 'tm:' .. g[1], g[2])
    redis.call('ZREM', base .. 'rm', g[2])
    redis.call('DEL', key)
    deleted[#deleted + 1] = mid
    touched[g[1]] = true
  end
end
local bumped = {}
for _, tid in ipairs(bumps) do
  if touched[tid] then bumped[#bumped + 1] = tid end
end
return {deleted, bump_all(bumped, now)}
