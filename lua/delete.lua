--[[
  Deletes jobs: each job's every key (its hash, its log lines, its attempts, the ends delivered
  from its children in other queues, its fan-out staging and its committed children not submitted
  yet, its dedup key while it holds it) and its entry in the list or set that holds it, and its
  count. A scheduled or running job is left as it is (its executor holds a lease on it: cancel it
  first, then delete it once it ended); so is a job not in the expected state, when one is given.
  A fan-out child deleted before it ended counts as cancelled on its parent, so that the parent's
  children-ended event still fires. A waiting job is looked for from the take end of its group's
  list, so deleting in take order costs little however long the list.

  KEYS[1] counts   (every key is built from ARGV[1])
  ARGV[1] key prefix
  ARGV[2] events stream max length
  ARGV[3] expected state ('' any)
  ARGV[4..] job ids

  Returns per id, in order: 'done' when it was deleted, or the state it was left in, or '' when
  there is no such job.
]]
--- @include "includes/common"
--- @include "includes/changes"
--- @include "includes/jobs"
--- @include "includes/groupChanges"
--- @include "includes/children"
--- @include "includes/batches"
--- @include "includes/dedup"
--- @include "includes/jobKeys"

local prefix = ARGV[1]
local expected = ARGV[3]
local FINAL = { success = true, failed = true, cancelled = true }
local out = {}
local now
local crossed = crossDeliveredHere(prefix)
for i = 4, #ARGV do
  local id = ARGV[i]
  local jobKey = KEY.job(prefix, id)
  local job = submittedJob(jobKey, 'group', 'd', 'takeSeq')
  local result = ''
  if job then
    local state = job[1]
    result = state
    if (expected == '' or state == expected) and state ~= 'scheduled' and state ~= 'running' then
      local group = job[2]
      local g = group or ''
      local known = true
      if FINAL[state] then
        call('ZREM', KEY.done(prefix, state), id)
      elseif state == 'delayed' then
        call('ZREM', KEY.delayed(prefix), id)
      elseif state == 'stuck' then
        -- (in `delayed` until due, then in its group's preferred list)
        if call('ZREM', KEY.delayed(prefix), id) == 0 and call('LREM', KEY.groupList(prefix, g, 'r'), '-1', id) == 1 then
          deferGroup(group, 'nr', -1)
        end
        deferGroup(group, 'stuck', -1)
      elseif state == 'waiting' then
        -- (a released job waits in the preferred list, the others in their priority's)
        if call('LREM', KEY.groupList(prefix, g, 'r'), '-1', id) == 1 then
          deferGroup(group, 'nr', -1)
        else
          local high = describeJob(job[3]) == 'high'
          if call('LREM', KEY.groupList(prefix, g, high and 'h' or 'l'), '-1', id) == 1 then deferGroup(group, high and 'nh' or 'nl', -1) end
        end
      else
        -- (a state this script does not know: left as it is)
        known = false
      end
      if known then
        local keys = addJobKeys({}, prefix, { id }, crossed)
        keys[#keys + 1] = KEY.fanned(prefix, id)
        if job[4] then keys[#keys + 1] = KEY.fanStaging(prefix, id, job[4]) end
        releaseDedupOf(prefix, id, false)
        -- (a child of a parent in another queue ends there as cancelled: sent before its hash goes)
        if not FINAL[state] and call('HEXISTS', jobKey, CROSS.queue) == 1 then cross.send(prefix, id, 'cancelled', nowMs()) end
        call('DEL', unpack(keys))
        call('ZREM', KEY.fanouts(prefix), id)
        left(state)
        if not FINAL[state] and isChild(prefix, id) then
          childEnded(id, false, 'cancelled')
          now = now or nowMs()
        end
        -- (a batch counts a job deleted before it ended as cancelled)
        if not FINAL[state] then batches.ended(batches.of(job[3]), 'cancelled') end
        result = 'done'
      end
    end
  end
  out[#out + 1] = result
end
flushGroups(prefix)
if now then flushChildren(prefix, now) end
batches.flush(prefix, now)
flushChanges(prefix, ARGV[2])
return out
