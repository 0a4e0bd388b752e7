-- A message with up to `before` predecessors and `after` successors in its
-- thread, ascending. ARGV: id, before, after. Returns {} if missing.
local mid, before, after = arg(), argn(), argn()
local g = redis.call('HMGET', base .. 'm:' .. mid, 't', 'k')
if not g[1] then return {} end
local index = base .. 'tm:' .. g[1]
local ids = {}
if before > 0 then
  local prev = redis.call('ZREVRANGEBYLEX', index, '(' .. g[2], '-', 'LIMIT', 0, fmt(before))
  for i = #prev, 1, -1 do ids[#ids + 1] = member_id(prev[i]) end
end
ids[#ids + 1] = mid
if after > 0 then
  for _, m in ipairs(redis.call('ZRANGEBYLEX', index, '(' .. g[2], '+', 'LIMIT', 0, fmt(after))) do
    ids[#ids + 1] = member_id(m)
  end
end
local out = {}
for i, id in ipairs(ids) do out[i] = message(id) end
return out
