--[[
  The ends delivered to a flow's parent from its children in other queues (`xd:<parent>`, written
  by includes/children's cross.deliver) go with the parent's hash. `xp` marks a shard where such
  an end was ever delivered (set by the first, never removed), so that removing a job where no
  flow has children in other queues costs no DEL of a key that is never there.
]]
--- @include "includes/common"
--- @export markCrossDelivered, crossDeliveredHere

-- Marks the shard of `prefix` as holding delivered ends (called by each new delivery record).
local function markCrossDelivered(prefix)
  call('SET', KEY.crossParents(prefix), '1')
end

-- Whether a parent of the shard of `prefix` may hold delivered ends: read once by a call that
-- removes jobs, which then removes KEY.crossDelivered of each job it removes.
local function crossDeliveredHere(prefix)
  return call('EXISTS', KEY.crossParents(prefix)) == 1
end
