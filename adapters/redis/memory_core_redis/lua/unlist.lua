-- Store slot: drop an erased resource from the listing (see
-- unlist_resource). ARGV: resource id. Returns 1 if dropped, 0 if kept.
return unlist_resource(arg())
