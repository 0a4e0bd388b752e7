-- Insert or wholly replace the resource record (key "r" of this slot).
-- ARGV: has working memory "1"/"0", working memory, metadata json, c, u.
local key = base .. 'r'
local has_wm, wm, meta, c, u = arg() == '1', arg(), arg(), arg(), arg()
redis.call('DEL', key)
redis.call('HSET', key, 'd', meta, 'c', c, 'u', u)
if has_wm then redis.call('HSET', key, 'w', wm) end
return 1
