-- Standalone server only (every key on one server): a whole write in one
-- atomic script: claim.lua, the write's step in each resource slot, then
-- apply.lua, each a local function step_<name>. Nothing can stop half-way,
-- so no intent is recorded.
-- ARGV: write ("save_messages", "put_thread", "copy_thread", "patch_thread",
--       "delete_thread", "patch_messages", "delete_messages",
--       "delete_resource": one group, no step arguments, "delete_found":
--       one group "", "", with the arguments n, message ids, now us), store base,
--       tombstone ttl, n, claim.lua's arguments, n groups, then per group:
--       resource base, resource id, n, the step's arguments (save_messages:
--       its first sequence, put_thread: its version floor, copy_thread:
--       both, are filled in here from the claim).
-- A thread write ("put_thread", "copy_thread", "patch_thread", "delete_thread") has one
-- group; for "patch_thread" and "delete_thread" its resource base and id
-- are "": the claim's directory lookup (owners[1]) names the resource.
-- "delete_found" is "delete_messages" in the groups the directory names:
-- the resource of each id, with the threads its stored messages are in as
-- the threads to bump.
-- Returns claim.lua's reply; when it is "ok" and the write ran, with
-- {per group: the step's reply} appended. A patch or delete of a thread the
-- directory does not know writes nothing and returns the claim's reply
-- alone (owners[1] nil).
local write, sbase, ttl = arg(), arg(), arg()
local claim_args = arglist(argn())
local groups = {}
for i = 1, argn() do
  groups[i] = {base = arg(), rid = arg()}
  groups[i].args = arglist(argn())
end

-- A thread the directory places in g's slot but the slot lacks: a deletion
-- that never reached the store slot (a dead multi-step write); its
-- tombstone's version, to apply. {} when the slot has no trace of it.
local function settle(g)
  local s = run_step(step_state, g.base, {'1', g.args[1]})[1][1]
  if s[3] == '' then return {} end
  return {s}
end

-- Per write: run its step in group g; returns the step's reply, the
-- snapshots to apply and the message ids to release.
local steps = {}
function steps.save_messages(g, claim)
  g.args[2] = claim[2]
  local r = run_step(step_save_messages, g.base, g.args)
  if r[1] == 'ok' then return r, r[2], {} end
  return r, {}, r[3]  -- stale: the new ids it never wrote
end
function steps.put_thread(g, claim)
  g.args[3] = claim[3][1]
  local r = run_step(step_put_thread, g.base, g.args)
  if r == 'exists' then return r, {}, {} end
  return r, {r}, {}
end
function steps.copy_thread(g, claim)
  g.args[1], g.args[2] = claim[2], claim[3][1]
  local r = run_step(step_copy_thread, g.base, g.args)
  if r[1] == 'ok' then return r, {r[2]}, r[4] end
  return r, {}, r[4]
end
function steps.patch_thread(g)
  local r = run_step(step_patch_thread, g.base, g.args)
  if not r then return r, settle(g), {} end
  if r == 'mismatch' then return r, {}, {} end
  return r, {r[2]}, {}
end
function steps.delete_thread(g)
  local r = run_step(step_delete_thread, g.base, g.args)
  if not r then return r, settle(g), {} end
  return r, {{g.args[1], 'd', r[1]}}, r[2]
end
function steps.patch_messages(g)
  local r = run_step(step_patch_messages, g.base, g.args)
  if r[1] == 'ok' then return r, r[2], {} end
  return r, {}, {}
end
function steps.delete_messages(g)
  local r = run_step(step_delete_messages, g.base, g.args)
  if r[1] == 'stale' then return r, {}, {} end
  return r, r[2], r[1]
end
-- Every thread of the resource deleted as delete_thread.lua does, then its
-- record, its slot's tombstones and its listing entry (an erasure leaves
-- no copy of its ids): {{thread ids}, messages deleted, 1/0 the record existed}.
function steps.delete_resource(g)
  local tids, snaps, ids = {}, {}, {}
  for i, m in ipairs(redis.call('ZRANGE', g.base .. 'tc', 0, -1)) do tids[i] = thread_id_of(m) end
  local messages = redis.call('ZCARD', g.base .. 'rm')
  for _, tid in ipairs(tids) do
    local r = run_step(step_delete_thread, g.base, {tid, ttl})
    snaps[#snaps + 1] = {tid, 'd', r[1]}
    for _, mid in ipairs(r[2]) do ids[#ids + 1] = mid end
  end
  local existed = redis.call('DEL', g.base .. 'r')
  run_step(erase_tombstones, g.base, {})
  run_step(function() return unlist_resource(arg()) end, sbase, {g.rid})
  return {tids, messages, existed}, snaps, ids
end

-- delete_found's groups: delete_messages' arguments per resource holding
-- some of the ids (n, its stored ids, n, their threads, now us).
local function found_groups(ids_args)
  local n = tonumber(ids_args[1])
  local now = ids_args[n + 2]
  local by, order = {}, {}
  for i = 2, n + 1 do
    local mid = ids_args[i]
    local rid = redis.call('HGET', sbase .. 'msg', mid)
    if rid then
      local g = by[rid]
      if not g then
        g = {base = resource_base(sbase, rid), rid = rid, ids = {}, tids = {}, seen = {}}
        by[rid] = g
        order[#order + 1] = g
      end
      local tid = redis.call('HGET', g.base .. 'm:' .. mid, 't')
      if tid then
        g.ids[#g.ids + 1] = mid
        if not g.seen[tid] then
          g.seen[tid] = true
          g.tids[#g.tids + 1] = tid
        end
      end
    end
  end
  local out = {}
  for _, g in ipairs(order) do
    if #g.ids > 0 then
      local a = {fmt(#g.ids)}
      for _, mid in ipairs(g.ids) do a[#a + 1] = mid end
      a[#a + 1] = fmt(#g.tids)
      for _, tid in ipairs(g.tids) do a[#a + 1] = tid end
      a[#a + 1] = now
      out[#out + 1] = {base = g.base, rid = g.rid, args = a}
    end
  end
  return out
end

local claim = run_step(step_claim, sbase, claim_args)
if claim[1] ~= 'ok' then return claim end
local found = write == 'delete_found'
if found then
  groups, write = found_groups(groups[1].args), 'delete_messages'
end
if write == 'patch_thread' or write == 'delete_thread' then
  local owner = claim[5][1]
  if not owner then return claim end
  groups[1].rid, groups[1].base = owner, resource_base(sbase, owner)
end
-- A message write over several resource slots runs every slot's checks
-- (a dry run) before any slot writes: when one slot finds the core's read
-- stale, no slot is written, as in one transaction, and every group replies
-- that slot's stale fact (a save's group with its new ids, released here).
-- delete_found names its groups from the slots themselves: never stale.
local DRY_RUN = {save_messages = step_save_messages, patch_messages = step_patch_messages,
                 delete_messages = step_delete_messages}
local function refused()
  local dry, failed = {}, nil
  checking = true
  for i, g in ipairs(groups) do
    if write == 'save_messages' then g.args[2] = claim[2] end
    dry[i] = run_step(DRY_RUN[write], g.base, g.args)
    failed = failed or (dry[i][1] == 'stale' and dry[i])
  end
  checking = false
  if not failed then return nil end
  local release, replies = {}, {}
  for i, g in ipairs(groups) do
    replies[i] = failed
    if write == 'save_messages' then
      replies[i] = {'stale', failed[2], dry[i][3]}
      for _, mid in ipairs(dry[i][3]) do
        release[#release + 1] = mid
        release[#release + 1] = g.rid
      end
    end
  end
  run_step(step_apply, sbase, apply_args(ttl, {}, release))
  claim[#claim + 1] = replies
  return claim
end
if DRY_RUN[write] and #groups > 1 and not found then
  local reply = refused()
  if reply then return reply end
end
local snaps, release, replies = {}, {}, {}
for i, g in ipairs(groups) do
  local reply, s, ids = steps[write](g, claim)
  replies[i] = reply
  for _, snap in ipairs(s) do snaps[#snaps + 1] = {g.rid, snap} end
  for _, mid in ipairs(ids) do
    release[#release + 1] = mid
    release[#release + 1] = g.rid
  end
end
run_step(step_apply, sbase, apply_args(ttl, snaps, release))
claim[#claim + 1] = replies
return claim
