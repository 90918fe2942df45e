--[[
  A step of the sweep of the groups that hold delayed or finished jobs (see includes/heldScan),
  for the dashboard's first load of its group index (src/dashboard/group-index.ts); its ticks
  go on with the same steps (dashboard-tick.lua). Read only.

  KEYS[1] delayed   (every key is built from ARGV[1])
  ARGV[1] key prefix
  ARGV[2] cursor ('0' starts a round)
  ARGV[3] members read at most (ZSCAN COUNT)

  Returns { next cursor ('0': the round is over), { group, ... } }
  Flagged no-writes: it runs while Redis refuses writes (maxmemory reached, a replica).
]]
--- @flags no-writes
--- @include "includes/heldScan"

local nextCursor, groups = heldStep(ARGV[1], ARGV[2], ARGV[3])
return { nextCursor, groups }
