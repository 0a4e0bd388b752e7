-- Partial update of a thread: title, shallow metadata merge, bump.
-- ARGV: id, now us, has title "1"/"0", title, n, metadata member pairs,
--       n, filter field ops. Returns {record, snapshot} or nil if missing.
local tid, now, has_title, title = arg(), argn(), arg() == '1', arg()
local patch = argpairs()
local ops = argpairs()
local key = base .. 't:' .. tid
local meta = redis.call('HGET', key, 'd')
if not meta then return false end
if has_title then redis.call('HSET', key, 'n', title) end
if #patch > 0 then redis.call('HSET', key, 'd', merge(meta, patch)) end
set_fields(key, ops)
local snap = bump(tid, now)
return {thread(tid), snap}
