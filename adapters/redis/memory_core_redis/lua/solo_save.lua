-- Standalone server only (every key on one server): save_messages in one
-- atomic script, claim + write in each resource + apply, so no intent is
-- needed and no step can be interrupted.
-- ARGV: store base, tombstone ttl, n, claim.lua's arguments, n groups, then
--       per group: resource base, resource id, n, save_messages.lua's
--       arguments (its first sequence is filled in here).
-- Returns claim.lua's reply, with {per group: save_messages.lua's reply}
-- appended when it is "ok".
local sbase, ttl = arg(), arg()
local claim_args = arglist(argn())
local groups = {}
for i = 1, argn() do
  groups[i] = {base = arg(), rid = arg()}
  groups[i].args = arglist(argn())
end
base = sbase
use_args(claim_args)
local claim = step_claim()
if claim[1] ~= 'ok' then return claim end
local apply_args, nsnap, release, replies = {ttl, 0}, 0, {}, {}
for i, g in ipairs(groups) do
  g.args[2] = claim[2]
  base = g.base
  use_args(g.args)
  local reply = step_save_messages()
  replies[i] = reply
  if reply[1] == 'ok' then
    for _, s in ipairs(reply[2]) do
      nsnap = nsnap + 1
      for j, part in ipairs({s[1], g.rid, s[2], s[3], s[4], s[5], s[6], fmt((#s - 6) / 2)}) do
        apply_args[#apply_args + 1] = part
      end
      for j = 7, #s do apply_args[#apply_args + 1] = s[j] end
    end
  else
    for _, mid in ipairs(reply[3]) do
      release[#release + 1] = mid
      release[#release + 1] = g.rid
    end
  end
end
apply_args[2] = fmt(nsnap)
apply_args[#apply_args + 1] = fmt(#release / 2)
for _, part in ipairs(release) do apply_args[#apply_args + 1] = part end
apply_args[#apply_args + 1] = '0'
apply_args[#apply_args + 1] = '0'
base = sbase
use_args(apply_args)
step_apply()
claim[#claim + 1] = replies
return claim
