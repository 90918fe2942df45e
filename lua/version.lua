--[[
  Answers the schema version this library reads and writes. A client calls it to learn whether
  the library is loaded before it tries FUNCTION LOAD, which a least-privilege user may not run.
  Flagged no-writes: it runs while Redis refuses writes.

  No KEYS, no ARGV.

  Returns SCHEMA_VERSION.
]]
--- @flags no-writes
--- @include "includes/wire"

return SCHEMA_VERSION
