-- A resource's slot after its erasure: remove the tombstones of its deleted
-- threads ("x:<id>" listed in "xs"), whose names hold the erased ids. The
-- store slot keeps each deletion's version under a keyed name (apply.lua).
-- No ARGV. Returns 1 when the slot now holds nothing of the resource (no
-- record, no thread: a racing write may have added one), else 0.
erase_tombstones()
return redis.call('EXISTS', base .. 'r', base .. 'tc') == 0 and 1 or 0
