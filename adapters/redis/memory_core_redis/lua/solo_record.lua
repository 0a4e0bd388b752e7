-- Standalone server only (every key on one server): a write of a resource's
-- record in one atomic script: its registration for the listing
-- (register.lua, in the store slot), then put_resource.lua or
-- patch_resource.lua in the resource's slot, each a local function
-- step_<name>.
-- ARGV: write ("put_resource" | "patch_resource"), resource id, the step's
--       arguments. KEYS[1] is the store base.
-- Returns the step's reply.
local write, rid = arg(), arg()
local rest = {}
for i = argi + 1, #args do rest[#rest + 1] = args[i] end
local rbase = resource_base(base, rid)
run_step(step_register, base, {rid})
if write == 'put_resource' then return run_step(step_put_resource, rbase, rest) end
return run_step(step_patch_resource, rbase, rest)
