--[[
  A step of the group gauges' count of the runs in progress per group
  (src/observability/metrics-sweep.ts): one ZSCAN of ARGV[3] members of `leases` (jobs taken
  and not finished), and the group of each of their jobs still scheduled or running. A sweep
  calls it step after step, so no call reads more than a step's jobs. Read only.

  KEYS[1] leases   (every key is built from ARGV[1])
  ARGV[1] key prefix
  ARGV[2] cursor of the scan ('0' starts a round)
  ARGV[3] members the step reads (ZSCAN COUNT)

  Returns { next cursor ('0': the round ended), { group, runs, group, runs, ... } }
  Flagged no-writes: it runs while Redis refuses writes (maxmemory reached, a replica).
]]
--- @flags no-writes
--- @include "includes/common"
--- @include "includes/leases"

local prefix = ARGV[1]
local r = call('ZSCAN', KEY.leases(prefix), ARGV[2], 'COUNT', ARGV[3])
local members = r[2]
local counts = {}
-- (ZSCAN answers member, score, member, score, ...)
for i = 1, #members, 2 do
  local id = leaseJobId(members[i])
  if id then
    local job = call('HMGET', KEY.job(prefix, id), 'state', 'group')
    if (job[1] == 'scheduled' or job[1] == 'running') and job[2] then counts[job[2]] = (counts[job[2]] or 0) + 1 end
  end
end
local out = {}
for group, n in pairs(counts) do
  out[#out + 1] = group
  out[#out + 1] = n
end
return { r[1], out }
