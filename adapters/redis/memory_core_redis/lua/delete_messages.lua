-- Delete messages of this resource, then bump threads; atomic.
-- ARGV: n, message ids, n, thread ids to bump, now us.
-- Returns {{deleted ids}, {snapshots}}.
local ids = arglist(argn())
local bumps = arglist(argn())
local now = argn()
local deleted = {}
for _, mid in ipairs(ids) do
  local key = base .. 'm:' .. mid
  local g = redis.call('HMGET', key, 't', 'k')
  if g[1] then
    redis.call('ZREM', base .. 'tm:' .. g[1], g[2])
    redis.call('ZREM', base .. 'rm', g[2])
    redis.call('DEL', key)
    deleted[#deleted + 1] = mid
  end
end
return {deleted, bump_all(bumps, now)}
