--[[
  Marks taken jobs `running` as their executor starts them. A job whose lease token no longer
  matches (taken over by another executor) is left alone and reported. A start that was already
  applied (the client resent it after a reconnect) is accepted again without change.

  KEYS[1] active   (every key is built from ARGV[1])
  ARGV[1] key prefix
  ARGV[2] events stream max length
  ARGV[3..] pairs: job id, lease token (takeSeq)

  A run of a periodic task may be dropped by its tolerance (see includes/periodicStart); the
  executor then ends it cancelled without calling its handler.

  Returns { started time (ms), ids whose lease is lost, ids of dropped periodic runs }.
]]
--- @include "includes/common"
--- @include "includes/periodicStart"

local prefix = ARGV[1]
local now = nowMs()
local lost = {}
local dropped = {}
for i = 3, #ARGV, 2 do
  local id = ARGV[i]
  local jobKey = prefix .. 'j:' .. id
  local job = redis.call('HMGET', jobKey, 'takeSeq', 'state', 'tracker', 'worker', 'dropped')
  if job[1] == ARGV[i + 1] and job[2] == 'scheduled' then
    if job[3] and job[3] ~= '' and periodicStart(prefix, now, id, job[3], job[4]) then dropped[#dropped + 1] = id end
    redis.call('HSET', jobKey, 'state', 'running', 'started', str(now))
    left('scheduled')
    changed(id, 'running')
  elseif job[1] == ARGV[i + 1] and job[2] == 'running' then
    -- A repeat of a start already applied (resent after a reconnect): nothing to do.
    if job[5] then dropped[#dropped + 1] = id end
  else
    lost[#lost + 1] = id
  end
end
flushChanges(prefix, ARGV[2])
return { now, lost, dropped }
