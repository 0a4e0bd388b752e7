-- Count or list threads from one lex index of this slot.
-- ARGV: mode "c"/"l", scope "r" (a resource's slot: records from "t:") or
--       "g" (store slot: filter on "g:", returns {id, resource id} pairs),
--       index suffix, lo, hi, desc "1"/"0", offset, limit (-1 all),
--       n, condition pairs, check intents "1"/"0".
-- Scope "g" with the check on and intents of unfinished writes pending
-- returns {"pending", lease cutoff, {thread id, resource id or nil, stamp}...}
-- instead: the caller rolls them forward and asks again without the check.
local mode, scope, suffix, lo, hi = arg(), arg(), arg(), arg(), arg()
local desc, offset, limit = arg() == '1', argn(), argn()
local conds = argpairs()
if scope == 'g' and arg() == '1' and redis.call('ZCARD', base .. 'pt') > 0 then
  local flat = redis.call('ZRANGE', base .. 'pt', 0, -1, 'WITHSCORES')
  local out = {'pending', fmt(lease_cutoff())}
  for i = 1, #flat, 2 do
    out[#out + 1] = {flat[i], redis.call('HGET', base .. 'g:' .. flat[i], 'r'), fmt(tonumber(flat[i + 1]))}
  end
  return out
end
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
