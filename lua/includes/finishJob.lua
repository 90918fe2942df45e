--[[
  Ends one run of a taken job (state scheduled or running) with an outcome:
    s success (payload: packed result)    f failure, retried with backoff while retries < maxRetries
    p permanent failure (no retry)        c cancelled
    r released back to the front of its group without counting a retry (graceful shutdown)
  A job whose cancel was requested ends cancelled whatever the outcome (but a release).
  The caller has checked the lease token. Returns the state the job ended in.
]]
local function finishJob(prefix, now, id, outcome, payload, retryDelay)
  local jobKey = prefix .. 'j:' .. id
  local job = redis.call('HMGET', jobKey, 'state', 'group', 'retries', 'maxRetries', 'cancel')
  local group = job[2]
  local gk = prefix .. 'g:' .. group
  redis.call('ZREM', prefix .. 'active', id)
  redis.call('HINCRBY', gk, 'running', -1)
  left(job[1])
  if job[5] == '1' and outcome ~= 'r' then outcome = 'c' end
  local state
  if outcome == 's' then
    state = 'success'
    redis.call('HSET', jobKey, 'state', state, 'finished', now, 'result', payload)
  elseif outcome == 'r' then
    state = 'waiting'
    redis.call('HSET', jobKey, 'state', state, 'worker', '')
    redis.call('RPUSH', gk .. ':r', id)
  elseif outcome == 'c' then
    state = 'cancelled'
    redis.call('HSET', jobKey, 'state', state, 'finished', now)
  else
    local retries = tonumber(job[3]) or 0
    if outcome == 'f' and retries < (tonumber(job[4]) or 0) then
      state = 'stuck'
      local due = now + retryDelay * (2 ^ retries)
      redis.call('HSET', jobKey, 'state', state, 'retries', retries + 1, 'error', payload, 'due', due)
      redis.call('ZADD', prefix .. 'delayed', due, id)
      redis.call('HINCRBY', gk, 'stuck', 1)
    else
      state = 'failed'
      redis.call('HSET', jobKey, 'state', state, 'finished', now, 'error', payload)
    end
  end
  if state == 'success' or state == 'failed' or state == 'cancelled' then
    redis.call('ZADD', prefix .. 'done:' .. state, now, id)
  end
  changed(id, state, (state == 'stuck' or state == 'failed') and payload or nil)
  if refreshGroup(prefix, group) then wake(prefix) end
  return state
end
