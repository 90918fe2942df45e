--[[
  A job's earlier attempts: the runs that did not end it (a failure retried, a run recovered
  from a lost lease, a failed or cancelled job put back), newest first in LIST `att:<id>`, each
  one MessagePack array of strings { started, finished, executor, outcome, error, lease token
  (the run's takeSeq) }. The run the
  job's hash holds (its current or last) is not in it, so that a job that succeeds at once costs
  nothing here. Outside `j:`, so that no job id (any text) can name it.
]]
--- @include "includes/common"
--- @export keepAttempt, keepLastRun

-- Adds a run that did not end job `id` to its attempts list, keeping the newest ATTEMPTS_KEPT - 1.
local function keepAttempt(prefix, id, token, started, finished, worker, outcome, err)
  local key = KEY.attempts(prefix, id)
  call('LPUSH', key, cmsgpack.pack({ started or '', finished or '', worker or '', outcome, err or '', token or '' }))
  call('LTRIM', key, '0', str(ATTEMPTS_KEPT - 2))
end

-- Moves the last run of job `id` (hash `jobKey`), which ended it in `state` (failed or
-- cancelled), to its attempts before the job is put back to run again; nothing when it never
-- ran, or when that run is in the list already (a job cancelled while it waited for a retry).
local function keepLastRun(prefix, id, jobKey, state)
  local run = call('HMGET', jobKey, 'started', 'finished', 'worker', 'error', 'takeSeq')
  if not run[1] then return end
  local newest = call('LINDEX', KEY.attempts(prefix, id), '0')
  if newest and cmsgpack.unpack(newest)[6] == run[5] then return end
  keepAttempt(prefix, id, run[5], run[1], run[2], run[3], state, state == 'failed' and run[4] or '')
end
