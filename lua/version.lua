--[[
  Answers the schema version this library reads and writes (for an operator: FCALL
  rota_<hash>_version 0). Flagged no-writes: it runs while Redis refuses writes.

  No KEYS, no ARGV.

  Returns SCHEMA_VERSION.
]]
--- @flags no-writes
--- @include "includes/wire"

return SCHEMA_VERSION
