--[[
  The shard's `tally` hash: counts that only grow, of events no process that serves metrics sees
  (a job cancelled by whichever client asked), read by the metrics' sweep (metrics-shard.lua).
  Fields: `cancelled:<task>` jobs of that task that ended cancelled (at once, or their run).
]]
--- @include "includes/common"
--- @include "includes/jobs"
--- @export tallyCancelled

-- Counts a job whose description is `d` as cancelled (a job whose task cannot be read counts under task '').
local function tallyCancelled(prefix, d)
  call('HINCRBY', KEY.tally(prefix), 'cancelled:' .. (d and jobTask(d) or ''), 1)
end
