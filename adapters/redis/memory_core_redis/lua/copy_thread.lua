-- Insert a thread and copy a selection of another thread's messages into
-- it (a clone or branch, memory_core.lineage.CopyPlan), all in this
-- resource slot: no message body leaves the server. The source thread lives
-- at `src` (on a cluster this slot's base: the adapter copies across slots
-- only on a standalone server, where every key is local).
-- ARGV: first sequence - 1 (from the claim), version floor (from the claim),
--       now us, source base, source thread id, lex bounds lo and hi of the
--       source's message index, newest N (-1: all), size limit, n, source
--       message ids to keep (n = -1: any), n, new ids, n, put_thread.lua's
--       arguments (mode "new"; its floor is set here).
-- Returns {"ok", snapshot of the new thread, {copied source ids in order},
-- {new ids left unused}}, or, writing nothing, {"exists", "", {}, {new ids}}
-- or {"over", the source id of a copy over the size limit, {}, {new ids}}.
local first, floor, now = argn(), arg(), argn()
local src, src_tid, lo, hi = arg(), arg(), arg(), arg()
local newest, limit = argn(), argn()
local nkeep = argn()
local keep = nil
if nkeep >= 0 then keep = arglist(nkeep) end
local new_ids = arglist(argn())
local put = arglist(argn())
put[3] = floor
local tid = put[2]
if redis.call('EXISTS', base .. 't:' .. tid) == 1 then return {'exists', '', {}, new_ids} end

local index = src .. 'tm:' .. src_tid
local members
if keep then
  members = {}
  for _, mid in ipairs(keep) do
    local g = redis.call('HMGET', src .. 'm:' .. mid, 't', 'k')
    if g[1] == src_tid and (lo == '-' or g[2] >= string.sub(lo, 2)) and (hi == '+' or g[2] < string.sub(hi, 2)) then
      members[#members + 1] = g[2]
    end
  end
  table.sort(members)
else
  members = redis.call('ZRANGEBYLEX', index, lo, hi)
end
local from = 1
if newest >= 0 then from = math.max(1, #members - newest + 1) end
local stop = math.min(#members, from + #new_ids - 1)

-- JSON text length of a str as memory_core.codec writes it (UTF-8 bytes).
local function quoted_len(s)
  local extra = 0
  for c in string.gmatch(s, '[%z\1-\31"\\]') do
    local b = string.byte(c)
    if b == 34 or b == 92 or b == 8 or b == 9 or b == 10 or b == 12 or b == 13 then
      extra = extra + 1
    else
      extra = extra + 5
    end
  end
  return #s + 2 + extra
end

local rows, copied = {}, {}
for i = from, stop do
  local mid = member_id(members[i])
  local h = redis.call('HGETALL', src .. 'm:' .. mid)
  local rec = {}
  for j = 1, #h, 2 do rec[h[j]] = h[j + 1] end
  if quoted_len(rec.o) + quoted_len(rec.y) + #rec.x + #rec.d > limit then return {'over', mid, {}, new_ids} end
  rows[#rows + 1] = {members[i], h}
  copied[#copied + 1] = mid
end

run_step(step_put_thread, base, put)
for k, row in ipairs(rows) do
  local new = new_ids[k]
  local member = string.sub(row[1], 1, 18) .. string.format('%020d', first + k) .. ':' .. new
  local h = row[2]
  for j = 1, #h, 2 do
    local f = h[j]
    if f == 't' then h[j + 1] = tid elseif f == 's' then h[j + 1] = fmt(first + k) elseif f == 'k' then h[j + 1] = member end
  end
  redis.call('HSET', base .. 'm:' .. new, unpack(h))
  redis.call('ZADD', base .. 'tm:' .. tid, 0, member)
  redis.call('ZADD', base .. 'rm', 0, member)
end
local unused = {}
for k = #rows + 1, #new_ids do unused[#unused + 1] = new_ids[k] end
local snap = (#rows > 0) and bump(tid, now) or snapshot(tid)
return {'ok', snap, copied, unused}
