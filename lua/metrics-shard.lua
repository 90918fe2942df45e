--[[
  The whole-shard figures of the metrics' sweep (src/observability/metrics-sweep.ts), one call a
  sweep: the job counts, what `delayed` holds due soon, and the live executors' info. The group
  sums come from the steps of metrics-autoscale.lua. Read only.

  KEYS[1] counts   (every key is built from ARGV[1])
  ARGV[1] key prefix
  ARGV[2] most executors listed
  ARGV[3] the due window (ms): `delayed` entries due up to now + this are counted

  Returns { now (ms), counts as a flat list state, n, ..., entries of `delayed` due by now +
            ARGV[3] (jobs and the entries of groups parked at their rate alike), { executor id,
            info JSON, ... }, the `tally` hash as a flat list field, n, ... (includes/tally) }
  Flagged no-writes: it runs while Redis refuses writes (maxmemory reached, a replica).
]]
--- @flags no-writes
--- @include "includes/common"

local prefix = ARGV[1]
local now = nowMs()
local counts = call('HGETALL', KEY.counts(prefix))
local due = call('ZCOUNT', KEY.delayed(prefix), '-inf', str(now + num(ARGV[3])))

local executors = {}
local ids = call('ZRANGEBYSCORE', KEY.workers(prefix), str(now), '+inf', 'LIMIT', '0', ARGV[2])
for i = 1, #ids do
  local info = call('GET', KEY.worker(prefix, ids[i]))
  if info then
    executors[#executors + 1] = ids[i]
    executors[#executors + 1] = info
  end
end

return { now, counts, due, executors, call('HGETALL', KEY.tally(prefix)) }
