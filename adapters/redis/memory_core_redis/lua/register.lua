-- Store slot: register resources (R-RESOURCES) before a write of their
-- records in their own slots, so the listing can find them.
-- ARGV: resource ids (as a composite step: its step arguments).
for i = 1, #args do register_resource(args[i]) end
return 1
