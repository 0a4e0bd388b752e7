-- memory-core-redis: helpers of the scripts that write (and of the store
-- slot's bookkeeping), after lib.lua.

-- JSON texts written by memory_core.codec (compact, no whitespace). Values
-- are never decoded: only the top-level members of an object are located,
-- so numbers, key order and every byte stay exactly as Python wrote them.
local function str_end(s, pos)
  local i = pos + 1
  while true do
    local j = string.find(s, '["\\]', i)
    if string.byte(s, j) == 34 then return j end
    i = j + 2
  end
end

local function value_end(s, pos)
  local b = string.byte(s, pos)
  if b == 34 then return str_end(s, pos) end
  if b == 123 or b == 91 then
    local depth, i = 0, pos
    while true do
      local j = string.find(s, '["{}%[%]]', i)
      local c = string.byte(s, j)
      if c == 34 then
        i = str_end(s, j) + 1
      else
        if c == 123 or c == 91 then depth = depth + 1 else depth = depth - 1 end
        if depth == 0 then return j end
        i = j + 1
      end
    end
  end
  return string.find(s, '[,}%]]', pos) - 1
end

-- Shallow merge, as Python's {**old, **patch}: old keys keep their place,
-- new keys follow in patch order. patch: flat {key json, value json, ...}.
local function merge(text, patch)
  local keys, vals, at = {}, {}, {}
  if string.byte(text, 2) ~= 125 then
    local pos = 2
    while true do
      local ke = str_end(text, pos)
      local ve = value_end(text, ke + 2)
      keys[#keys + 1] = string.sub(text, pos, ke)
      vals[#vals + 1] = string.sub(text, ke + 2, ve)
      at[keys[#keys]] = #keys
      if string.byte(text, ve + 1) == 125 then break end
      pos = ve + 2
    end
  end
  for i = 1, #patch, 2 do
    local j = at[patch[i]]
    if j then
      vals[j] = patch[i + 1]
    else
      keys[#keys + 1] = patch[i]
      vals[#vals + 1] = patch[i + 1]
      at[patch[i]] = #keys
    end
  end
  local parts = {}
  for i = 1, #keys do parts[i] = keys[i] .. ':' .. vals[i] end
  return '{' .. table.concat(parts, ',') .. '}'
end

-- The JSON text of top-level member `keyjson` (a key as JSON text) of an
-- object's text, or nil when absent.
local function member(text, keyjson)
  if string.byte(text, 2) == 125 then return nil end
  local pos = 2
  while true do
    local ke = str_end(text, pos)
    local ve = value_end(text, ke + 2)
    if string.sub(text, pos, ke) == keyjson then return string.sub(text, ke + 2, ve) end
    if string.byte(text, ve + 1) == 125 then return nil end
    pos = ve + 2
  end
end

-- Compare-and-set conditions: mode "-" none, "n" nothing stored (nil, or
-- `json` only: not a JSON string), "s" stored equals `want`.
local function condition_holds(mode, current, want, json)
  if mode == '-' then return true end
  if mode == 'n' then
    return (not current) or (json and string.byte(current, 1) ~= 34)
  end
  return current == want
end

local function hset_pairs(key, flat)
  for i = 1, #flat, 200 do
    redis.call('HSET', key, unpack(flat, i, math.min(i + 199, #flat)))
  end
end

-- Filter fields "~<key>" hold the R-META form of scalar metadata values;
-- ops: flat {field, form or "" to remove}.
local function set_fields(key, ops)
  for i = 1, #ops, 2 do
    if ops[i + 1] == '' then
      redis.call('HDEL', key, ops[i])
    else
      redis.call('HSET', key, ops[i], ops[i + 1])
    end
  end
end

-- last_message_at sort keys: a thread without messages sorts last in either
-- direction (same sentinels as memory_core.query.NO_MESSAGE_*_US).
local NOLAST_ASC = tkey(9000000000000000)
local NOLAST_DESC = tkey(-9000000000000000)
local function last_keys(lkey)
  if lkey == '' then return NOLAST_ASC, NOLAST_DESC end
  return lkey, lkey
end

-- Move a thread's entries in this slot's last_message_at indexes ("tla"
-- ASC, "tld" DESC) from old to new lkey ("" = no message; old nil = none yet).
local function index_last(tid, old, new)
  if old then
    local a, d = last_keys(old)
    redis.call('ZREM', base .. 'tla', a .. ':' .. tid)
    redis.call('ZREM', base .. 'tld', d .. ':' .. tid)
  end
  if new then
    local a, d = last_keys(new)
    redis.call('ZADD', base .. 'tla', 0, a .. ':' .. tid)
    redis.call('ZADD', base .. 'tld', 0, d .. ':' .. tid)
  end
end

-- The sort key of a thread's newest message ("" without messages).
local function newest_key(tid)
  local m = redis.call('ZREVRANGEBYLEX', base .. 'tm:' .. tid, '+', '-', 'LIMIT', 0, 1)[1]
  if not m then return '' end
  return string.sub(m, 1, 17)
end

-- What the store-wide records need to know of a thread after a change:
-- {tid, "l", version, created key, updated key, last key ("" none),
--  filter field pairs...}.
local function snapshot(tid)
  local key = base .. 't:' .. tid
  local want = {'c', 'u', 'v', 'k'}
  for _, f in ipairs(redis.call('HKEYS', key)) do
    if string.byte(f) == 126 then want[#want + 1] = f end
  end
  local g = redis.call('HMGET', key, unpack(want))
  local out = {tid, 'l', g[3], tkey(tonumber(g[1])), tkey(tonumber(g[2])), g[4] or ''}
  for i = 5, #want do
    out[#out + 1] = want[i]
    out[#out + 1] = g[i]
  end
  return out
end

-- R-BUMP: updated_at = min(max(now, old + 1), TIME_MAX_US); the version grows by one.
-- Every message write bumps each thread whose messages it changed, so the
-- bump also sets last_message_at ("l" us, "k" its sort key) from the newest message.
local function bump(tid, now)
  local key = base .. 't:' .. tid
  local g = redis.call('HMGET', key, 'u', 'v', 'k')
  if not g[1] then return nil end
  local u = tonumber(g[1])
  local nu = math.min(math.max(now, u + 1), TIME_MAX_US)
  redis.call('ZREM', base .. 'tu', tkey(u) .. ':' .. tid)
  redis.call('ZADD', base .. 'tu', 0, tkey(nu) .. ':' .. tid)
  redis.call('HSET', key, 'u', fmt(nu), 'v', fmt(tonumber(g[2]) + 1))
  local old, new = g[3] or '', newest_key(tid)
  if new ~= old then
    index_last(tid, old, new)
    if new == '' then
      redis.call('HDEL', key, 'l', 'k')
    else
      local m = redis.call('ZREVRANGEBYLEX', base .. 'tm:' .. tid, '+', '-', 'LIMIT', 0, 1)[1]
      redis.call('HSET', key, 'k', new, 'l', redis.call('HGET', message_key(m), 'c'))
    end
  end
  return snapshot(tid)
end

local function bump_all(tids, now)
  local snaps = {}
  for _, tid in ipairs(tids) do
    local s = bump(tid, now)
    if s then snaps[#snaps + 1] = s end
  end
  return snaps
end

-- Where these message ids are stored (id -> thread id, false when absent:
-- one HGET each, so callers need no EXISTS of their own), and the first of
-- them stored in a thread not among tids (it moved after the core read it:
-- the write is stale), or nil.
local function moved(mids, tids)
  local wanted, where, away = {}, {}, nil
  for _, tid in ipairs(tids) do wanted[tid] = true end
  for _, mid in ipairs(mids) do
    local tid = redis.call('HGET', base .. 'm:' .. mid, 't')
    where[mid] = tid
    if tid and not wanted[tid] and not away then away = mid end
  end
  return away, where
end

-- Stamps unique per write (see lib.lua, server_ms).
local function new_stamp()
  return server_ms() * 1000 + redis.call('INCR', base .. 'stamp') % 1000
end
-- The store slot's tombstone of a deleted thread ("gx:<hash>": the version
-- of its deletion) is named by HMAC-SHA1 of the thread id under the store's
-- secret "key" (random, set at open), never by the id: an erased thread id
-- stays nowhere in the store (issue 25). Call with base = the store base.
local function unhex(h)
  return (string.gsub(h, '..', function(c) return string.char(tonumber(c, 16)) end))
end
local hmac_pads = nil
local function tombstone_key(tid)
  if not hmac_pads then
    local secret = unhex(redis.call('GET', base .. 'key') or '')
    local inner, outer = {}, {}
    for i = 1, 64 do
      local b = string.byte(secret, i) or 0
      inner[i] = string.char(bit.bxor(b, 54))
      outer[i] = string.char(bit.bxor(b, 92))
    end
    hmac_pads = {table.concat(inner), table.concat(outer)}
  end
  return base .. 'gx:' .. redis.sha1hex(hmac_pads[2] .. unhex(redis.sha1hex(hmac_pads[1] .. tid)))
end

-- Remove every tombstone of this resource slot's deleted threads (erasure).
local function erase_tombstones()
  for _, tid in ipairs(redis.call('ZRANGE', base .. 'xs', 0, -1)) do redis.call('DEL', base .. 'x:' .. tid) end
  redis.call('DEL', base .. 'xs')
end

-- Remove intents {member, stamp, ...} of zset `suffix` still holding that stamp.
local function clear_intents(suffix, pairs)
  local key = base .. suffix
  for i = 1, #pairs, 2 do
    if tonumber(redis.call('ZSCORE', key, pairs[i])) == tonumber(pairs[i + 1]) then
      redis.call('ZREM', key, pairs[i])
    end
  end
end

-- The base of resource `rid`'s keys from the store's base "{P}:": "{P:R}:"
-- with R escaped, exactly as _keys.Layout.resource makes it.
local function resource_base(store_base, rid)
  local tag = (string.gsub(rid, '%%', '%%25'))
  tag = (string.gsub(tag, '{', '%%7B'))
  tag = (string.gsub(tag, '}', '%%7D'))
  return string.sub(store_base, 1, -3) .. ':' .. tag .. '}:'
end

-- Composite scripts (standalone only, solo.lua): run step `fn` (a script's
-- body as a local function) on slot base `step_base` with argument list
-- `step_args`; its reply.
local function run_step(fn, step_base, step_args)
  base, args, argi = step_base, step_args, 0
  return fn()
end

-- Set by solo.lua while it runs a message write's steps as a dry run: each
-- step (save_messages, patch_messages, delete_messages) then returns right
-- after its checks, writing nothing ({"ok", ...} or its stale reply), so a
-- write over several resource slots is checked everywhere before any slot
-- is written.
local checking = false

-- apply.lua's arguments from snapshots `snaps` ({resource id, snapshot} each:
-- a snapshot of writes.lua's snapshot(), or state.lua's deletion {id, "d",
-- version}) and message ids to release (flat {id, resource id, ...}); no
-- intents to clear.
local function apply_args(ttl, snaps, release)
  local out = {ttl, fmt(#snaps)}
  for _, e in ipairs(snaps) do
    local rid, s = e[1], e[2]
    for _, part in ipairs({s[1], rid, s[2], s[3], s[4] or '', s[5] or '', s[6] or '', fmt(math.max(#s - 6, 0) / 2)}) do
      out[#out + 1] = part
    end
    for j = 7, #s do out[#out + 1] = s[j] end
  end
  out[#out + 1] = fmt(#release / 2)
  for _, part in ipairs(release) do out[#out + 1] = part end
  out[#out + 1] = '0'
  out[#out + 1] = '0'
  return out
end

-- The resource listing (R-RESOURCES, store slot only): lex zset "rs" holds
-- every resource that may have a record or threads, hash "rsa" the stamp of
-- each one's last registration. A write registers its resource before it
-- writes there; the listing checks each candidate in its slot (the truth)
-- and drops those found empty whose registration is older than the lease.
local function register_resource(rid)
  redis.call('ZADD', base .. 'rs', 0, rid)
  redis.call('HSET', base .. 'rsa', rid, fmt(new_stamp()))
end

-- An erased resource leaves the listing at once (its id stays nowhere),
-- unless a write on one of its threads is in flight (an intent whose thread
-- the directory gives to it): that write registered it and may still
-- create a thread there, so the listing's own check drops it later.
local function unlist_resource(rid)
  for _, tid in ipairs(redis.call('ZRANGE', base .. 'pt', 0, -1)) do
    if redis.call('HGET', base .. 'g:' .. tid, 'r') == rid then return 0 end
  end
  redis.call('ZREM', base .. 'rs', rid)
  redis.call('HDEL', base .. 'rsa', rid)
  return 1
end
