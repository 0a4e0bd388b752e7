-- ARGV: thread ids. Returns one record {id, title, metadata, c, u, l} or nil each.
local out = {}
for i = 1, #ARGV do out[i] = thread(ARGV[i]) end
return out
