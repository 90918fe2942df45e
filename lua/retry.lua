--[[
  Puts failed or cancelled jobs back in their groups as `waiting`, with their retry counts reset.
  Any other state is left as it is.

  KEYS[1] counts   (every key is built from ARGV[1])
  ARGV[1] key prefix
  ARGV[2] events stream max length
  ARGV[3] expected state ('' any): a job in another state is left as it is
  ARGV[4..] job ids

  Returns per id, in order: 'done' when it was put back, or the state it was left in, or '' when
  there is no such job.
]]
--- @include "includes/common"
--- @include "includes/changes"
--- @include "includes/jobs"
--- @include "includes/groupChanges"
--- @include "includes/children"
--- @include "includes/attempts"
--- @include "includes/batches"

local prefix = ARGV[1]
local expected = ARGV[3]

-- Puts job `id` back; answers its outcome (see above).
local retry
function retry(id)
  local jobKey = KEY.job(prefix, id)
  local job = submittedJob(jobKey, 'group', 'd')
  if not job then return '' end
  local state = job[1]
  if state ~= 'failed' and state ~= 'cancelled' then return state end
  if expected ~= '' and state ~= expected then return state end
  -- A job a child's failure failed waits again for its children: its child is retried.
  local by = state == 'failed' and call('HGET', jobKey, FLOW_FIELDS.failedBy)
  if by then
    local r = retry(by)
    if r ~= 'done' then return state end
    return 'done'
  end
  call('ZREM', KEY.done(prefix, state), id)
  keepLastRun(prefix, id, jobKey, state)
  call('HDEL', jobKey, 'finished', 'cancel', 'due')
  call('HSET', jobKey, 'state', 'waiting', 'retries', 0)
  local high = describeJob(job[3]) == 'high'
  call('LPUSH', KEY.groupList(prefix, job[2], high and 'h' or 'l'), id)
  left(state)
  changed(id, 'waiting')
  deferGroup(job[2], high and 'nh' or 'nl', 1)
  batches.reopened(batches.of(job[3]), state)
  -- a child counts as not ended again (its parent's children-ended event fires again when it
  -- ends), and the waiter its failure failed waits again (includes/children)
  if call('HEXISTS', jobKey, CROSS.queue) == 1 then
    -- (a child of a parent in another queue: its re-open is sent there)
    cross.send(prefix, id, 'open', nowMs())
  elseif isChild(prefix, id) then
    local parent = parentOf(id)
    local parentKey = KEY.job(prefix, parent)
    local field = CHILD_FIELDS[state]
    if state == 'failed' and call('HGET', jobKey, FLOW_FIELDS.policy) == FAILURE_POLICY.remove then
      field = CHILD_FIELDS.removed
    end
    call('HINCRBY', parentKey, field, '-1')
    call('HDEL', parentKey, CHILD_FIELDS.ended)
    if state == 'failed' then reopenWaiter(prefix, parent, id) end
  end
  return 'done'
end

local out = {}
for i = 4, #ARGV do out[#out + 1] = retry(ARGV[i]) end
if flushGroups(prefix) then wake(prefix) end
batches.flush(prefix)
flushChanges(prefix, ARGV[2])
return out
