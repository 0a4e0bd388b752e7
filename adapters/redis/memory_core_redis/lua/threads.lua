-- Count or list threads from one lex index of this slot (see read_threads).
-- ARGV: mode "c"/"l", scope "r" or "g", index suffix, lo, hi, desc "1"/"0",
--       offset, limit (-1 all), n, condition pairs.
local mode, scope, suffix, lo, hi = arg(), arg(), arg(), arg(), arg()
local desc, offset, limit = arg() == '1', argn(), argn()
return read_threads(mode, scope, suffix, lo, hi, desc, offset, limit, argpairs())
