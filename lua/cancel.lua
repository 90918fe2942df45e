--[[
  Cancels jobs. A waiting, delayed, stuck or waiting-children job ends `cancelled` at once (a
  waiting-children job's children are left as they are: Queue.cancel cancels them, when asked,
  with calls of their own); a scheduled or running job is
  flagged (in its hash and its lease member) and its executor told on the cancel channel (it
  aborts the run's signal, and the run ends `cancelled`). A finished job is left as it is.

  KEYS[1] counts   (every key is built from ARGV[1])
  ARGV[1] key prefix
  ARGV[2] events stream max length
  ARGV[3] expected state ('' any): a job in another state is left as it is
  ARGV[4..] job ids

  Returns per id, in order: 'done' when it was cancelled, 'cancelling' for a run being aborted,
  the state a job left as it is is in, or '' when there is no such job.
]]
--- @include "includes/common"
--- @include "includes/changes"
--- @include "includes/jobs"
--- @include "includes/leases"
--- @include "includes/groupChanges"
--- @include "includes/children"
--- @include "includes/waitIndex"
--- @include "includes/batches"
--- @include "includes/dedup"
--- @include "includes/tally"

local prefix = ARGV[1]
local expected = ARGV[3]
local now

-- Cancels job `id`; answers its outcome (see above).
local function cancel(id)
  local jobKey = KEY.job(prefix, id)
  local job = submittedJob(jobKey, 'group', 'd', 'takeSeq', 'cancel')
  if not job then return '' end
  local state = job[1]
  if expected ~= '' and state ~= expected then return state end
  if state == 'scheduled' or state == 'running' then
    if job[5] ~= '1' then
      -- its lease member is marked so (see includes/leases), keeping its expiry
      local held = leaseMember(job[4], state, nil, id)
      local expiry = call('ZSCORE', KEY.leases(prefix), held)
      if expiry then
        call('ZREM', KEY.leases(prefix), held)
        call('ZADD', KEY.leases(prefix), expiry, leaseMember(job[4], state, '1', id))
      end
    end
    call('HSET', jobKey, 'cancel', '1')
    call('PUBLISH', KEY.cancel(prefix), id)
    return 'cancelling'
  end
  if state ~= 'waiting' and state ~= 'stuck' and state ~= 'delayed' and state ~= WAITING_CHILDREN then return state end

  local group = job[2]
  -- (a waiting-children job is in no list: its children release it)
  if state == WAITING_CHILDREN then
    group = nil
    waitIndex.remove(prefix, id)
  elseif state == 'delayed' then
    -- (in `delayed` alone: no list of its group holds it yet)
    call('ZREM', KEY.delayed(prefix), id)
  elseif call('LREM', KEY.groupList(prefix, group, 'r'), '-1', id) == 1 then
    deferGroup(group, 'nr', -1)
  elseif state == 'waiting' then
    local high = describeJob(job[3]) == 'high'
    if call('LREM', KEY.groupList(prefix, group, high and 'h' or 'l'), '-1', id) == 1 then
      deferGroup(group, high and 'nh' or 'nl', -1)
    end
  end
  if state == 'stuck' then
    call('ZREM', KEY.delayed(prefix), id)
    deferGroup(group, 'stuck', -1)
  end
  now = now or nowMs()
  call('HSET', jobKey, 'state', 'cancelled', 'finished', now)
  call('ZADD', KEY.done(prefix, 'cancelled'), now, id)
  releaseDedupOf(prefix, id, true)
  left(state)
  changed(id, 'cancelled')
  tallyCancelled(prefix, job[3])
  if isChild(prefix, id) then childEnded(id, false, 'cancelled') end
  batches.ended(batches.of(job[3]), 'cancelled')
  return 'done'
end

local out = {}
for i = 4, #ARGV do out[#out + 1] = cancel(ARGV[i]) end
flushGroups(prefix)
if now then flushChildren(prefix, now) end
if now then batches.flush(prefix, now) end
flushChanges(prefix, ARGV[2])
return out
