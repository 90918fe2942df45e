--[[
  An executor leaves the executor registry as it closes: its entry in `workers` and its info
  (`w:<id>`) go together, so no reader sees one without the other.

  KEYS[1] workers  (every key is built from ARGV[1])
  ARGV[1] key prefix
  ARGV[2] executor id

  Returns 1 when it was registered, else 0.
]]
--- @include "includes/common"

local prefix = ARGV[1]
local worker = ARGV[2]
call('DEL', KEY.worker(prefix, worker))
return call('ZREM', KEY.workers(prefix), worker)
