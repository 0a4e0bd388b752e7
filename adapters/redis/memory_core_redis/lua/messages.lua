-- Count or list messages of this slot: one resource's index ("rm") or the
-- indexes of some of its threads ("tm:<id>"), merged in R-ORDER.
-- ARGV: mode "c"/"l", lo, hi, desc "1"/"0", offset, limit (-1 all),
--       n, condition pairs, n, thread ids (none: the resource index).
-- Returns {count or records, {thread ids not in this slot}}.
local mode, lo, hi, desc = arg(), arg(), arg(), arg() == '1'
local offset, limit = argn(), argn()
local conds = argpairs()
local tids = arglist(argn())
local indexes = {}
if #tids == 0 then
  indexes[1] = base .. 'rm'
else
  for i, tid in ipairs(tids) do indexes[i] = base .. 'tm:' .. tid end
end
local missing = #tids > 0 and missing_threads(tids) or {}
if mode == 'c' then
  local n = 0
  for _, index in ipairs(indexes) do n = n + count(index, lo, hi, conds, message_key) end
  return {n, missing}
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
return {out, missing}
