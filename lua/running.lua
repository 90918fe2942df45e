--[[
  Counts the runs in progress per group: jobs taken and not finished (in `leases`, scheduled or
  running). Read only; for inspection (a group's own count is kept only while it has a limit).

  KEYS[1] leases   (every key is built from ARGV[1])
  ARGV[1] key prefix

  Returns a flat list: group, count, group, count, ...
  Flagged no-writes: it runs while Redis refuses writes (maxmemory reached, a replica).
]]
--- @flags no-writes
--- @include "includes/leases"

local out = {}
for group, n in pairs(runningByGroup(ARGV[1])) do
  out[#out + 1] = group
  out[#out + 1] = n
end
return out
