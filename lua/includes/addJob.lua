--[[
  Adds one job in state `waiting` unless a job with its id exists.
  f: id, task, group, args, subject, submitter, priority ('high'|'low'), maxRetries,
     maxRuntime, tracker, occurrence (the last four may be '').
  Returns 1 when added, 0 when the id existed.
]]
local function addJob(prefix, now, f)
  local id = f[1]
  local jobKey = prefix .. 'j:' .. id
  if redis.call('EXISTS', jobKey) == 1 then return 0 end
  local group = f[3]
  redis.call('HSET', jobKey, 'id', id, 'task', f[2], 'group', group, 'args', f[4],
    'subject', f[5], 'submitter', f[6], 'priority', f[7], 'maxRetries', f[8],
    'maxRuntime', f[9], 'tracker', f[10], 'occurrence', f[11],
    'submitted', now, 'state', 'waiting', 'retries', 0)
  local gk = prefix .. 'g:' .. group
  local list = gk .. (f[7] == 'high' and ':h' or ':l')
  if redis.call('LPUSH', list, id) == 1 then
    redis.call('SADD', prefix .. 'groups', group)
    refreshGroup(prefix, group)
  end
  changed(id, 'waiting')
  return 1
end
