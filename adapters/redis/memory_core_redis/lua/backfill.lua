-- Store slot, once per store written before the resource listing existed:
-- register the owners of the threads in the global index "tc", a chunk at
-- a time (R-RESOURCES).
-- ARGV: lex lower bound of "tc" ("-" or "(" .. member), count.
-- Returns the last member read, or "" at the end.
local lo, count = arg(), argn()
local members = redis.call('ZRANGEBYLEX', base .. 'tc', lo, '+', 'LIMIT', 0, count)
for _, member in ipairs(members) do
  local rid = redis.call('HGET', base .. 'g:' .. string.sub(member, 19), 'r')
  if rid then register_resource(rid) end
end
if #members < count then return '' end
return members[#members]
