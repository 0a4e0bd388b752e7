-- Store slot, step one of a write: reserve thread and message ids for their
-- resources and allocate sequence numbers. All or nothing: an id already
-- held by another resource is a conflict and nothing is written.
-- ARGV: sequence numbers wanted, n, (thread id, resource id) pairs,
--       n, (message id, resource id) pairs.
-- Returns {"ok", first sequence - 1, {version floors of the threads}} or
--         {"conflict", "t"/"m", id, holder}.
local nseq = argn()
local threads = argpairs()
local msgs = argpairs()
for i = 1, #threads, 2 do
  local held = redis.call('HGET', base .. 'g:' .. threads[i], 'r')
  if held and held ~= threads[i + 1] then return {'conflict', 't', threads[i], held} end
end
for i = 1, #msgs, 2 do
  local held = redis.call('HGET', base .. 'msg', msgs[i])
  if held and held ~= msgs[i + 1] then return {'conflict', 'm', msgs[i], held} end
end
local floors = {}
for i = 1, #threads, 2 do
  local g = base .. 'g:' .. threads[i]
  floors[#floors + 1] = fmt((tonumber(redis.call('HGET', g, 'v')) or 0) + 1)
  redis.call('HSET', g, 'r', threads[i + 1])
  redis.call('PERSIST', g)
end
for i = 1, #msgs, 2 do redis.call('HSET', base .. 'msg', msgs[i], msgs[i + 1]) end
local first = 0
if nseq > 0 then first = redis.call('INCRBY', base .. 'seq', nseq) - nseq end
return {'ok', fmt(first), floors}
