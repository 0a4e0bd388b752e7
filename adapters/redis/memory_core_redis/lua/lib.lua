-- memory-core-redis: helpers prepended to every script (then reads.lua for
-- the read scripts, writes.lua for the others: a read script defines only
-- what it uses, as every call runs the whole preamble).
-- KEYS[1] is the base of the slot's keys ("{P:R}:" or "{P}:"); every other
-- key a script touches is built from it, so all share its hash tag (slot).
-- Numbers leave scripts formatted with %d (tostring prints 7.2e+15).
local base = KEYS[1]
-- (a composite script, standalone only, reassigns it for each step)

local function fmt(n) return string.format('%d', n) end

-- Order-preserving text of a time in microseconds (same as _keys.time_key).
local function tkey(us)
  if us >= 0 then return '1' .. string.format('%016d', us) end
  return '0' .. string.format('%016d', 9000000000000000 + us)
end

-- ARGV reader; a composite script points it at each step's arguments.
local args, argi = ARGV, 0
local function arg() argi = argi + 1; return args[argi] end
local function argn() return tonumber(arg()) end
local function arglist(n)
  local t = {}
  for i = 1, n do t[i] = arg() end
  return t
end
local function argpairs() return arglist(2 * argn()) end

-- conds: flat {field, form, ...}; all must be present and equal. The
-- field names are unpacked once per query, not per record.
local function matcher(conds)
  if #conds == 0 then return nil end
  local names, wanted = {}, {}
  for i = 1, #conds, 2 do
    names[#names + 1] = conds[i]
    wanted[#wanted + 1] = conds[i + 1]
  end
  if #names == 1 then
    local name, form = names[1], wanted[1]
    return function(key) return redis.call('HGET', key, name) == form end
  end
  return function(key)
    local got = redis.call('HMGET', key, unpack(names))
    for i = 1, #names do
      if got[i] ~= wanted[i] then return false end
    end
    return true
  end
end

-- The ranks (0-based, ascending) of the first and last members of a lex
-- index inside [lo, hi]: O(log N) each, however far into the index they lie.
local function rank_range(index, lo, hi)
  local first, last = 0, nil
  if lo ~= '-' then
    -- the members below lo: "[x" leaves x out of them, "(x" counts it in
    local below = (string.byte(lo) == 91 and '(' or '[') .. string.sub(lo, 2)
    first = redis.call('ZLEXCOUNT', index, '-', below)
  end
  if hi == '+' then
    last = redis.call('ZCARD', index) - 1
  else
    last = redis.call('ZLEXCOUNT', index, '-', hi) - 1
  end
  return first, last
end

-- Members `skip` .. `skip + need - 1` (need -1: to the end) of [lo, hi] in
-- order, read by rank: LIMIT's offset would walk every skipped member.
local function by_rank(index, lo, hi, desc, skip, need)
  local first, last = rank_range(index, lo, hi)
  if desc then
    local top = last - skip
    local bottom = need < 0 and first or math.max(first, top - need + 1)
    if top < bottom then return {} end
    local r = redis.call('ZRANGE', index, fmt(bottom), fmt(top))
    local out = {}
    for i = #r, 1, -1 do out[#out + 1] = r[i] end
    return out
  end
  local start = first + skip
  local stop = need < 0 and last or math.min(last, start + need - 1)
  if stop < start then return {} end
  return redis.call('ZRANGE', index, fmt(start), fmt(stop))
end

-- Up to `need` (-1: all) members of a lex index inside [lo, hi], in order,
-- whose record (keyof(member)) matches conds, after skipping `skip` matches.
-- Without conds it reads only the members it returns; with conds it walks
-- the range until it has them (a metadata filter has no index).
local CHUNK = 512
local function scan(index, lo, hi, desc, skip, need, conds, keyof)
  if need == 0 then return {} end
  local matches = matcher(conds)
  if not matches then
    if skip > 0 then return by_rank(index, lo, hi, desc, skip, need) end
    local count = need < 0 and -1 or need
    if desc then
      return redis.call('ZREVRANGEBYLEX', index, hi, lo, 'LIMIT', fmt(skip), fmt(count))
    end
    return redis.call('ZRANGEBYLEX', index, lo, hi, 'LIMIT', fmt(skip), fmt(count))
  end
  local out = {}
  while true do
    local r
    if desc then
      r = redis.call('ZREVRANGEBYLEX', index, hi, lo, 'LIMIT', 0, CHUNK)
    else
      r = redis.call('ZRANGEBYLEX', index, lo, hi, 'LIMIT', 0, CHUNK)
    end
    for _, m in ipairs(r) do
      if matches(keyof(m)) then
        if skip > 0 then
          skip = skip - 1
        else
          out[#out + 1] = m
          if need > 0 and #out >= need then return out end
        end
      end
    end
    if #r < CHUNK then return out end
    if desc then hi = '(' .. r[#r] else lo = '(' .. r[#r] end
  end
end

-- Members of [lo, hi] whose record matches conds: the index's cardinality
-- (O(1), kept by the writes) when unfiltered, O(log N) with bounds only.
local function count(index, lo, hi, conds, keyof)
  local matches = matcher(conds)
  if not matches then
    if lo == '-' and hi == '+' then return redis.call('ZCARD', index) end
    return redis.call('ZLEXCOUNT', index, lo, hi)
  end
  local n = 0
  while true do
    local r = redis.call('ZRANGEBYLEX', index, lo, hi, 'LIMIT', 0, CHUNK)
    for _, m in ipairs(r) do
      if matches(keyof(m)) then n = n + 1 end
    end
    if #r < CHUNK then return n end
    lo = '(' .. r[#r]
  end
end

-- Message members: <tkey 17>:<seq 20>:<id>; the id starts at byte 40.
local function member_id(m) return string.sub(m, 40) end
local function message_key(m) return base .. 'm:' .. string.sub(m, 40) end
-- Thread members: <tkey 17>:<id>; the id starts at byte 19.
local function thread_id_of(m) return string.sub(m, 19) end

local function message(mid)
  local g = redis.call('HMGET', base .. 'm:' .. mid, 't', 'o', 'y', 'x', 'd', 'c', 's')
  if not g[1] then return false end
  return {mid, g[1], g[2], g[3], g[4], g[5], g[6], g[7]}
end

-- A thread record {id, title, metadata, c, u, l}; l is the created_at (us)
-- of its newest message, "" without messages.
local function thread(tid)
  local g = redis.call('HMGET', base .. 't:' .. tid, 'n', 'd', 'c', 'u', 'l')
  if not g[1] then return false end
  return {tid, g[1], g[2], g[3], g[4], g[5] or ''}
end

local function missing_threads(tids)
  local out = {}
  for _, tid in ipairs(tids) do
    if redis.call('EXISTS', base .. 't:' .. tid) == 0 then out[#out + 1] = tid end
  end
  return out
end

-- Intents of multi-slot writes (store slot only): zsets "pt" (thread ids)
-- and "pm" (message ids) scored by a stamp: server ms * 1000 + a counter,
-- unique per write, so a write clears exactly its own intents.
local function server_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
-- Stamps below this belong to writes presumed dead (older than the lease).
local function lease_cutoff() return (server_ms() - INTENT_LEASE_MS) * 1000 end

