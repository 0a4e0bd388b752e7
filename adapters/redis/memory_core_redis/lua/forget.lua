-- Store slot: drop listing candidates (R-RESOURCES) their slots showed
-- empty (no record, no thread), if still registered with the stamp seen
-- then and that stamp is older than the lease: a write registering its
-- resource meanwhile (a new stamp) keeps it.
-- ARGV: n, (resource id, stamp) pairs.
local seen, cutoff = argpairs(), lease_cutoff()
for i = 1, #seen, 2 do
  local stamp = redis.call('HGET', base .. 'rsa', seen[i])
  if stamp == seen[i + 1] and tonumber(stamp) < cutoff then
    redis.call('ZREM', base .. 'rs', seen[i])
    redis.call('HDEL', base .. 'rsa', seen[i])
  end
end
return 1
