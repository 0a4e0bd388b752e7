-- Count or list messages of this slot (see read_messages).
-- ARGV: mode "c"/"l", lo, hi, desc "1"/"0", offset, limit (-1 all),
--       n, condition pairs, n, thread ids (none: the resource index).
-- Returns {count or records, {thread ids not in this slot}}.
local mode, lo, hi, desc = arg(), arg(), arg(), arg() == '1'
local offset, limit = argn(), argn()
local conds = argpairs()
local tids = arglist(argn())
return {read_messages(mode, lo, hi, desc, offset, limit, conds, tids), missing_threads(tids)}
