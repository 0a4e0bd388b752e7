-- Store slot: the resource holding each thread id and message id.
-- ARGV: n, thread ids, message ids. Returns {{rid or nil}, {rid or nil}}.
local tids = arglist(argn())
local threads = {}
for i, tid in ipairs(tids) do threads[i] = redis.call('HGET', base .. 'g:' .. tid, 'r') end
local mids = arglist(#ARGV - argi)
local msgs = {}
for i = 1, #mids, 1000 do
  local got = redis.call('HMGET', base .. 'msg', unpack(mids, i, math.min(i + 999, #mids)))
  for _, rid in ipairs(got) do msgs[#msgs + 1] = rid end
end
return {threads, msgs}
