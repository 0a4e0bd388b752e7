-- Store slot: candidates of the resource listing (R-RESOURCES), ascending
-- (memcmp of UTF-8: code point order), with their registration stamps.
-- ARGV: lex lower bound ("-" or "(" .. id), count.
-- Returns {lease cutoff, {id, stamp, ...}}.
local lo, count = arg(), argn()
local out = {}
for _, rid in ipairs(redis.call('ZRANGEBYLEX', base .. 'rs', lo, '+', 'LIMIT', 0, count)) do
  out[#out + 1] = rid
  out[#out + 1] = redis.call('HGET', base .. 'rsa', rid) or '0'
end
return {fmt(lease_cutoff()), out}
