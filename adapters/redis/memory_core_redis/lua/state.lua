-- What this resource's slot holds of some threads and messages, for rolling
-- a multi-slot write forward. ARGV: n, thread ids, then message ids.
-- Returns {{per thread: its snapshot (see writes.lua), or {id, "d", version of
-- its deletion or "" when the slot has no trace of it}}, {1/0 per message}}.
local tids = arglist(argn())
local threads = {}
for i, tid in ipairs(tids) do
  if redis.call('EXISTS', base .. 't:' .. tid) == 1 then
    threads[i] = snapshot(tid)
  else
    threads[i] = {tid, 'd', redis.call('GET', base .. 'x:' .. tid) or ''}
  end
end
local msgs = {}
while argi < #args do
  msgs[#msgs + 1] = redis.call('EXISTS', base .. 'm:' .. arg())
end
return {threads, msgs}
