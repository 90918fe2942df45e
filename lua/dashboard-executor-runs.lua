--[[
  The runs in progress of a queue shard by executor, for the dashboard's executors page
  (src/dashboard/): each run's job id, the executor that holds it, its state, group and packed
  description, for at most ARGV[2] runs (the leases of the earliest expiry first; the pad, never expiring, is
  not read). Runs are as
  many as the executors' slots; the bound keeps a page's work fixed however many there are.
  Read only.

  KEYS[1] leases   (every key is built from ARGV[1])
  ARGV[1] key prefix
  ARGV[2] most runs read

  Returns { now (ms), runs in progress in all, { job id, executor id, state, group, packed description,
            started (ms) or false, ... } }
  Flagged no-writes: it runs while Redis refuses writes (maxmemory reached, a replica).
]]
--- @flags no-writes
--- @include "includes/wire"
--- @include "includes/common"
--- @include "includes/leases"

local prefix = ARGV[1]
local out = {}
leasedJobs(prefix, function(id)
  local job = call('HMGET', KEY.job(prefix, id), 'worker', 'state', 'group', 'd', 'started')
  if job[1] and (job[2] == 'scheduled' or job[2] == 'running') then
    local n = #out
    out[n + 1], out[n + 2], out[n + 3], out[n + 4], out[n + 5], out[n + 6] = id, job[1], job[2], job[3] or '',
      job[4] or '', job[5] or ''
  end
end, 1e15, tonumber(ARGV[2]))
-- (less the pad member)
local total = call('ZCARD', KEY.leases(prefix))
if call('ZSCORE', KEY.leases(prefix), LEASES_PAD) then total = total - 1 end
return { nowMs(), total, out }
