-- Create-or-update the resource record: working memory, metadata merge, bump.
-- ARGV: now us, working memory mode ("-" keep, "n" clear, "s" set),
--       working memory, n, metadata member pairs, condition mode ("-" none,
--       "n" no working memory stored, "s" it equals the next argument), text.
-- Returns {working memory or nil, metadata json, c, u}, or "mismatch" when
-- the condition fails (nothing written).
local now, mode, wm = argn(), arg(), arg()
local patch = argpairs()
local cmode, ctext = arg(), arg()
local key = base .. 'r'
local g = redis.call('HMGET', key, 'd', 'u', 'w')
if not condition_holds(cmode, g[3], ctext, false) then return 'mismatch' end
if g[1] then
  redis.call('HSET', key, 'u', fmt(math.min(math.max(now, tonumber(g[2]) + 1), TIME_MAX_US)))
else
  redis.call('HSET', key, 'c', fmt(now), 'u', fmt(now))
end
if #patch > 0 or not g[1] then redis.call('HSET', key, 'd', merge(g[1] or '{}', patch)) end
if mode == 'n' then
  redis.call('HDEL', key, 'w')
elseif mode == 's' then
  redis.call('HSET', key, 'w', wm)
end
return redis.call('HMGET', key, 'w', 'd', 'c', 'u')
