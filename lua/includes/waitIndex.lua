--[[
  The index of the jobs waiting for children (state `waiting-children`, which no group's list
  holds): the shard's ZSET `waiting-children` (job id -> its submit time, ms), so that the jobs of
  that state are listed a page at a time like those of any other state (Queue.jobs, the
  dashboard). A job is added where it enters the state (includes/flowJob, a fan-out's
  continuation in includes/finishJob, a waiter re-opened in includes/children) and removed where
  it leaves it (released, failed or cancelled). Only jobs with children enter it: a job without
  costs nothing here.
]]
--- @include "includes/common"
--- @export waitIndex

local waitIndex = {}

-- Job `id` (hash `jobKey`) entered `waiting-children`: indexed by its submit time (`submitted`,
-- text, or read from its hash when nil).
function waitIndex.add(prefix, id, jobKey, submitted)
  submitted = submitted or call('HGET', jobKey, 'submitted') or '0'
  call('ZADD', KEY.waitingChildren(prefix), submitted, id)
end

-- Job `id` left `waiting-children`.
function waitIndex.remove(prefix, id)
  call('ZREM', KEY.waitingChildren(prefix), id)
end
