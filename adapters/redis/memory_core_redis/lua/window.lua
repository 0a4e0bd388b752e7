-- A message with up to `before` predecessors and `after` successors in its
-- thread, ascending. ARGV: id, before, after. Returns {} if missing.
return read_window(arg(), argn(), argn())
