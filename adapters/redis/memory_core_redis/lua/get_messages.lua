-- ARGV: message ids. Returns a record or nil for each.
local out = {}
for i = 1, #ARGV do out[i] = message(ARGV[i]) end
return out
