-- Store slot: register resources (R-RESOURCES) before a write of their
-- records in their own slots, so the listing can find them.
-- ARGV: resource ids.
for i = 1, #ARGV do register_resource(ARGV[i]) end
return 1
