--[[
  One step of a bulk retry: puts failed jobs back in their groups as `waiting` (retry count reset,
  as retry.lua does for one), optionally only those of one group and of one task, visiting at
  most a batch of the failed set (see includes/finishedScan). Only jobs that failed before the
  first step are visited, so a job that fails again meanwhile is not retried twice. A fan-out
  child put back counts as not ended on its parent again, as with retry.lua. The caller
  repeats it with the cursor it answers until it answers none, so that no call holds Redis for long.

  KEYS[1] done:failed   (every key is built from ARGV[1])
  ARGV[1] key prefix
  ARGV[2] events stream max length
  ARGV[3] cursor until ('' in the first step: now), ARGV[4] cursor score, ARGV[5] cursor skip
  ARGV[6] most members visited
  ARGV[7] group, or '' for every group
  ARGV[8] task, or '' for every task

  Returns { jobs put back, until, next score, next skip } (the last two absent when the walk is over).
]]
--- @include "includes/common"
--- @include "includes/changes"
--- @include "includes/jobs"
--- @include "includes/addJob"
--- @include "includes/finishedScan"
--- @include "includes/children"
--- @include "includes/attempts"
--- @include "includes/batches"

local prefix = ARGV[1]
local untilMs = ARGV[3]
if untilMs == '' then untilMs = str(nowMs()) end
local group, task = ARGV[7], ARGV[8]
local key = KEYS[1]
local batch = newJobBatch()
local out = {}
local retried = 0
local score, skip = walkFinished(key, untilMs, ARGV[4], tonumber(ARGV[5]), tonumber(ARGV[6]), function(id)
  local jobKey = KEY.job(prefix, id)
  local job = submittedJob(jobKey, 'group', 'd')
  if job and job[1] == 'failed' then
    if (group ~= '' and job[2] ~= group) or (task ~= '' and jobTask(job[3]) ~= task) then return false end
    -- (a job a child's failure failed waits again when that child is retried: kept)
    if call('HEXISTS', jobKey, FLOW_FIELDS.failedBy) == 1 then return false end
    keepLastRun(prefix, id, jobKey, 'failed')
    call('HDEL', jobKey, 'finished', 'cancel', 'due')
    call('HSET', jobKey, 'state', 'waiting', 'retries', '0')
    enqueueLater(prefix, batch, id, job[2], describeJob(job[3]) == 'high')
    left('failed')
    retried = retried + 1
    batches.reopened(batches.of(job[3]), 'failed')
    if call('HEXISTS', jobKey, CROSS.queue) == 1 then
      -- (a child of a parent in another queue: its re-open is sent there)
      cross.send(prefix, id, 'open', nowMs())
    elseif isChild(prefix, id) then
      local parent = parentOf(id)
      local parentKey = KEY.job(prefix, parent)
      local removed = call('HGET', jobKey, FLOW_FIELDS.policy) == FAILURE_POLICY.remove
      call('HINCRBY', parentKey, removed and CHILD_FIELDS.removed or CHILD_FIELDS.failed, '-1')
      call('HDEL', parentKey, CHILD_FIELDS.ended)
      reopenWaiter(prefix, parent, id)
    end
  end
  -- (a member whose job is gone or not failed is dropped)
  out[#out + 1] = id
  return true
end)
sendChunks('ZREM', key, out, #out, 1000)
if flushJobs(prefix, batch) then wake(prefix) end
batches.flush(prefix)
flushChanges(prefix, ARGV[2])
if score == nil then return { retried, untilMs } end
return { retried, untilMs, score, skip }
