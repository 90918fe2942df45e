--[[
  Adds one job in state `waiting` unless a job with its id exists.
  f: id, task, group, args, subject, submitter, priority ('high'|'low'), maxRetries,
     maxRuntime, tracker, occurrence (the last four may be '').
  Returns 1 when added, 0 when the id existed.
]]
local OPTIONAL_JOB_FIELDS = { [5] = 'subject', [6] = 'submitter', [9] = 'maxRuntime', [10] = 'tracker', [11] = 'occurrence' }

local function addJob(prefix, now, f)
  local id = f[1]
  local jobKey = prefix .. 'j:' .. id
  if redis.call('EXISTS', jobKey) == 1 then return 0 end
  local group = f[3]
  local fields = { 'id', id, 'task', f[2], 'group', group, 'args', f[4], 'priority', f[7],
    'maxRetries', f[8], 'submitted', now, 'state', 'waiting' }
  for i, name in pairs(OPTIONAL_JOB_FIELDS) do
    if f[i] ~= '' then fields[#fields + 1] = name; fields[#fields + 1] = f[i] end
  end
  redis.call('HSET', jobKey, unpack(fields))
  local high = f[7] == 'high'
  local gk = prefix .. 'g:' .. group
  redis.call('LPUSH', gk .. (high and ':h' or ':l'), id)
  updateGroup(prefix, group, high and { nh = 1 } or { nl = 1 })
  changed(id, 'waiting')
  return 1
end
