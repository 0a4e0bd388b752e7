-- A read plan of one resource's slot, from one snapshot (the script).
-- ARGV: n, thread ids;
--       resource record "1"/"0";
--       messages "1"/"0", then count "1"/"0" (whether the total is
--         wanted: else it is 0 and nothing is counted), the count's lo, hi
--         (no keyset edge), the page's lo, hi, desc, offset, limit, n,
--         condition pairs, n, thread ids (as messages.lua);
--       threads "1"/"0", then index suffix, the page's lo, hi, desc,
--         offset, limit, n, condition pairs (as threads.lua, scope "r"; the
--         count spans the whole index);
--       n, window triples (id, before, after).
-- Returns {thread records, resource record {w, d, c, u} or {},
--          {count, records, missing thread ids} or {},
--          {count, records} or {}, windows}.
local threads = {}
for i, tid in ipairs(arglist(argn())) do threads[i] = thread(tid) end
local resource = {}
if arg() == '1' then resource = redis.call('HMGET', base .. 'r', 'w', 'd', 'c', 'u') end
local messages = {}
if arg() == '1' then
  local counted, clo, chi, lo, hi, desc = arg() == '1', arg(), arg(), arg(), arg(), arg() == '1'
  local offset, limit = argn(), argn()
  local conds = argpairs()
  local tids = arglist(argn())
  local total, items = 0, {}
  if counted then total = read_messages('c', clo, chi, desc, 0, -1, conds, tids) end
  if limit ~= 0 then items = read_messages('l', lo, hi, desc, offset, limit, conds, tids) end
  messages = {total, items, missing_threads(tids)}
end
local page = {}
if arg() == '1' then
  local suffix, lo, hi = arg(), arg(), arg()
  local desc, offset, limit = arg() == '1', argn(), argn()
  local conds = argpairs()
  local total = read_threads('c', 'r', suffix, '-', '+', desc, 0, -1, conds)
  local items = {}
  if limit ~= 0 then items = read_threads('l', 'r', suffix, lo, hi, desc, offset, limit, conds) end
  page = {total, items}
end
local windows = {}
for i = 1, argn() do windows[i] = read_window(arg(), argn(), argn()) end
return {threads, resource, messages, page, windows}
