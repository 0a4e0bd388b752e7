-- Store slot, step one of a multi-slot write: record the write's intents,
-- reserve thread and message ids for their resources (registering the
-- resources of threads for the listing, R-RESOURCES) and allocate sequence
-- numbers. All or nothing: an id already held by another resource is a
-- conflict and nothing is written.
-- ARGV: record intents "1"/"0" (a single-script write needs none),
--       sequence numbers wanted, n, (thread id, resource id) pairs,
--       n, (message id, resource id) pairs, n, thread ids the write changes.
-- Returns {"ok", first sequence - 1, {version floors of the claimed
-- threads}, stamp, {resource id or nil of each changed thread}} or
-- {"conflict", "t"/"m", id, holder, stamp of its pending intent or "",
--  lease cutoff}.
local intents, nseq = arg() == '1', argn()
local threads = argpairs()
local msgs = argpairs()
local touched = arglist(argn())
local function conflict(kind, id, holder)
  local pending = redis.call('ZSCORE', base .. 'p' .. kind, id)
  pending = pending and fmt(tonumber(pending)) or ''
  return {'conflict', kind, id, holder, pending, fmt(lease_cutoff())}
end
for i = 1, #threads, 2 do
  local held = redis.call('HGET', base .. 'g:' .. threads[i], 'r')
  if held and held ~= threads[i + 1] then return conflict('t', threads[i], held) end
end
for i = 1, #msgs, 2 do
  local held = redis.call('HGET', base .. 'msg', msgs[i])
  if held and held ~= msgs[i + 1] then return conflict('m', msgs[i], held) end
end
local stamp = new_stamp()
local floors = {}
for i = 1, #threads, 2 do
  local g = base .. 'g:' .. threads[i]
  local v = redis.call('HGET', g, 'v')
  if not v then
    -- an id claimed again after its deletion: the tombstone's version moves
    -- into the record, so the new thread's versions start above it
    local tomb = tombstone_key(threads[i])
    v = redis.call('GET', tomb)
    if v then
      redis.call('HSET', g, 'v', v)
      redis.call('DEL', tomb)
    end
  end
  floors[#floors + 1] = fmt((tonumber(v) or 0) + 1)
  redis.call('HSET', g, 'r', threads[i + 1])
  redis.call('PERSIST', g)
  register_resource(threads[i + 1])
end
for i = 1, #msgs, 2 do
  redis.call('HSET', base .. 'msg', msgs[i], msgs[i + 1])
  if intents then redis.call('ZADD', base .. 'pm', stamp, msgs[i]) end
end
local owners = {}
for i, tid in ipairs(touched) do
  if intents then redis.call('ZADD', base .. 'pt', stamp, tid) end
  owners[i] = redis.call('HGET', base .. 'g:' .. tid, 'r')
end
local first = 0
if nseq > 0 then first = redis.call('INCRBY', base .. 'seq', nseq) - nseq end
return {'ok', fmt(first), floors, fmt(stamp), owners}
