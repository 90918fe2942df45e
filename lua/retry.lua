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

local prefix = ARGV[1]
local expected = ARGV[3]

-- Puts job `id` back; answers its outcome (see above).
local function retry(id)
  local jobKey = prefix .. 'j:' .. id
  local job = submittedJob(jobKey, 'group', 'd')
  if not job then return '' end
  local state = job[1]
  if state ~= 'failed' and state ~= 'cancelled' then return state end
  if expected ~= '' and state ~= expected then return state end
  call('ZREM', prefix .. 'done:' .. state, id)
  keepLastRun(prefix, id, jobKey, state)
  call('HDEL', jobKey, 'finished', 'cancel', 'due')
  call('HSET', jobKey, 'state', 'waiting', 'retries', 0)
  local high = describeJob(job[3]) == 'high'
  call('LPUSH', prefix .. 'g:' .. job[2] .. (high and ':h' or ':l'), id)
  left(state)
  changed(id, 'waiting')
  deferGroup(job[2], high and 'nh' or 'nl', 1)
  -- a fan-out child counts as not ended again (its parent's children-ended event fires again when it ends)
  if isChild(prefix, id) then
    local parentKey = prefix .. 'j:' .. parentOf(id)
    call('HINCRBY', parentKey, CHILD_FIELDS[state], '-1')
    call('HDEL', parentKey, CHILD_FIELDS.ended)
  end
  return 'done'
end

local out = {}
for i = 4, #ARGV do out[#out + 1] = retry(ARGV[i]) end
if flushGroups(prefix) then wake(prefix) end
flushChanges(prefix, ARGV[2])
return out
