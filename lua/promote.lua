--[[
  Runs delayed and stuck jobs now: each becomes `waiting` at the front of its priority's list in
  its group (the next of that priority to be taken), a delayed job's due time set to now, a stuck
  job keeping its retry count. The first job of the call is put in front of the others. Jobs in
  another state, or not in the expected state when one is given, are left as they are.

  KEYS[1] counts   (every key is built from ARGV[1])
  ARGV[1] key prefix
  ARGV[2] events stream max length
  ARGV[3] expected state: delayed, stuck, or '' for either
  ARGV[4..] job ids

  Returns per id, in order: 'done' when it was promoted, or the state it was left in, or '' when
  there is no such job.
]]
--- @include "includes/common"
--- @include "includes/changes"
--- @include "includes/jobs"
--- @include "includes/groupChanges"

local prefix = ARGV[1]
local expected = ARGV[3]
local out = {}
local now = str(nowMs())
-- (the last id first: each goes in front of those before it, so the first ends in front)
for i = #ARGV, 4, -1 do
  local id = ARGV[i]
  local jobKey = KEY.job(prefix, id)
  local job = submittedJob(jobKey, 'group', 'd')
  local result = ''
  if job then
    local state = job[1]
    result = state
    if (state == 'delayed' or state == 'stuck') and (expected == '' or state == expected) then
      local group = job[2]
      if call('ZREM', KEY.delayed(prefix), id) == 0 and state == 'stuck' then
        -- (a stuck job whose retry came is in its group's preferred list)
        if call('LREM', KEY.groupList(prefix, group, 'r'), '-1', id) == 1 then deferGroup(group, 'nr', -1) end
      end
      if state == 'stuck' then
        deferGroup(group, 'stuck', -1)
        call('HDEL', jobKey, 'due')
        call('HSET', jobKey, 'state', 'waiting')
      else
        call('HSET', jobKey, 'state', 'waiting', 'runAt', now)
      end
      local high = describeJob(job[3]) == 'high'
      call('RPUSH', KEY.groupList(prefix, group, high and 'h' or 'l'), id)
      deferGroup(group, high and 'nh' or 'nl', 1)
      left(state)
      changed(id, 'waiting')
      result = 'done'
    end
  end
  out[i - 3] = result
end
if flushGroups(prefix) then wake(prefix) end
flushChanges(prefix, ARGV[2])
return out
