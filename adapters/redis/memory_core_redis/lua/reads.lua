-- Read helpers shared by messages.lua, window.lua, threads.lua and read.lua
-- (a read plan answered in one call).

-- Count or list messages of this slot: one resource's index ("rm") or the
-- indexes of some of its threads ("tm:<id>"), merged in R-ORDER. A thread
-- not in this slot has no index here: it adds nothing (callers report it
-- with missing_threads).
local function read_messages(mode, lo, hi, desc, offset, limit, conds, tids)
  local indexes = {}
  if #tids == 0 then
    indexes[1] = base .. 'rm'
  else
    for i, tid in ipairs(tids) do indexes[i] = base .. 'tm:' .. tid end
  end
  if mode == 'c' then
    local n = 0
    for _, index in ipairs(indexes) do n = n + count(index, lo, hi, conds, message_key) end
    return n
  end
  local picked
  if #indexes == 1 then
    picked = scan(indexes[1], lo, hi, desc, offset, limit, conds, message_key)
  else
    local need = limit < 0 and -1 or offset + limit
    local all, keys = {}, {}
    for _, index in ipairs(indexes) do
      for _, m in ipairs(scan(index, lo, hi, desc, 0, need, conds, message_key)) do
        all[#all + 1] = m
        -- exact sort key: four numbers of at most 10 digits (no strcoll)
        keys[m] = {tonumber(string.sub(m, 1, 9)), tonumber(string.sub(m, 10, 17)),
                   tonumber(string.sub(m, 19, 28)), tonumber(string.sub(m, 29, 38))}
      end
    end
    table.sort(all, function(a, b)
      local x, y = keys[a], keys[b]
      for i = 1, 4 do
        if x[i] ~= y[i] then
          if desc then return x[i] > y[i] end
          return x[i] < y[i]
        end
      end
      return false
    end)
    picked = {}
    local last = limit < 0 and #all or math.min(#all, offset + limit)
    for i = offset + 1, last do picked[#picked + 1] = all[i] end
  end
  local out = {}
  for i, m in ipairs(picked) do out[i] = message(member_id(m)) end
  return out
end

-- A message with up to `before` predecessors and `after` successors in its
-- thread, ascending; {} if it is not in this slot.
local function read_window(mid, before, after)
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
end

-- Count or list threads from one lex index of this slot; scope "r" (a
-- resource's slot: records from "t:") or "g" (store slot: filter on "g:",
-- {id, resource id} pairs).
local function read_threads(mode, scope, suffix, lo, hi, desc, offset, limit, conds)
  local prefix = base .. (scope == 'r' and 't:' or 'g:')
  local function keyof(m) return prefix .. thread_id_of(m) end
  local index = base .. suffix
  if mode == 'c' then return count(index, lo, hi, conds, keyof) end
  local out = {}
  for i, m in ipairs(scan(index, lo, hi, desc, offset, limit, conds, keyof)) do
    local tid = thread_id_of(m)
    if scope == 'r' then
      out[i] = thread(tid)
    else
      out[i] = {tid, redis.call('HGET', prefix .. tid, 'r')}
    end
  end
  return out
end
