-- Partial update of a thread: title, shallow metadata merge, bump.
-- ARGV: id, now us, has title "1"/"0", title, n, metadata member pairs,
--       n, filter field ops, condition mode ("-" none, "n" no string under
--       metadata key "working_memory", "s" its JSON text equals the next
--       argument), JSON text. Returns {record, snapshot}, nil if missing, or
--       "mismatch" when the condition fails (nothing written).
local tid, now, has_title, title = arg(), argn(), arg() == '1', arg()
local patch = argpairs()
local ops = argpairs()
local cmode, ctext = arg(), arg()
local key = base .. 't:' .. tid
local meta = redis.call('HGET', key, 'd')
if not meta then return false end
if cmode ~= '-' and not condition_holds(cmode, member(meta, '"working_memory"'), ctext, true) then
  return 'mismatch'
end
if has_title then redis.call('HSET', key, 'n', title) end
if #patch > 0 then redis.call('HSET', key, 'd', merge(meta, patch)) end
set_fields(key, ops)
local snap = bump(tid, now)
return {thread(tid), snap}
