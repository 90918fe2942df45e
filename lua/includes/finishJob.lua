--[[
  Ends one run of a taken job (state scheduled or running) with an outcome:
    s success (payload: packed result)    f failure, retried with backoff while retries < maxRetries
    p permanent failure (no retry)        c cancelled
    r released back to the front of its group without counting a retry (graceful shutdown)
    u unhandled: the executor has no handler for the job's task (payload: its grace, ms); passed
      on to `delayed` (ending `delayed`) or failed for good, as includes/unhandled decides
    o success of a run that staged children (ctx.fanOut): they are committed with it (commitFanOut);
      when its staging is gone it is a failure (f) instead
  A job whose cancel was requested ends cancelled whatever the outcome (but a release).
  `job` is HMGET of the job's takeSeq, state, cancel and group (what every outcome needs; a
  failure reads the rest itself; the group may be left out when the outcome is neither f nor r
  and the queue has no concurrency limits, see GROUP_READ); the caller has checked the lease
  token and removes the run's lease. `started`, when given, is written as the run's start time
  in the same write (a run whose start was not sent separately, see finish.lua). A run retried
  is kept in the job's attempts (includes/attempts). A failed run of
  a periodic task (a job with a tracker) also raises a periodic.failed event.
  `at` is what the finishJob calls of one script call share (beginFinishes, once per call).
  Returns the state the job ended in. The set and group changes of a batch are applied together:
  callers run finishBatch(prefix) after their last finishJob and before reading those keys.
]]
--- @include "includes/common"
--- @include "includes/changes"
--- @include "includes/jobs"
--- @include "includes/groups"
--- @include "includes/groupChanges"
--- @include "includes/setWrites"
--- @include "includes/attempts"
--- @include "includes/unhandled"
--- @include "includes/tally"
--- @include "includes/addJob"
--- @include "includes/children"
--- @include "includes/waitIndex"
--- @export GROUP_READ, beginFinishes, finishJob, finishBatch
-- The outcomes whose end writes to the job's group (a release goes back to its list, a failure
-- may be retried, and so may a fan-out whose staging is gone); the end of any other run reads the
-- group only in a queue with limits.
local GROUP_READ = { [OUTCOME_RELEASED] = true, [OUTCOME_FAILED] = true, [OUTCOME_FANNED_OUT] = true }

-- The HSET arguments of the job being ended (reused: the library keeps it across calls).
local endFields = {}

-- What the finishJob calls of one script call share: its queue, its time (and as text), and the
-- lists of set writes they add to (the finished-state additions by state, of the states that
-- finishJob adds to a set).
-- (reused: the library keeps it across calls)
local finishing = { adds = {} }
local function beginFinishes(prefix, now)
  local at, adds = finishing, finishing.adds
  at.prefix, at.now, at.nowS = prefix, now, str(now)
  adds.success, adds.failed, adds.cancelled = nil, nil, nil
  return at
end

-- Commits the children the run of job `id` with lease `token` staged (ctx.fanOut): its staging
-- list `fan:<token>:<id>` (the number of children, then their submit chunks) becomes the
-- parent's `fanned:<id>`, listed in `fanouts` for fanout.lua to submit chunk by chunk, and the
-- job's child counts start. A number that ends CONTINUATION_MARK is followed by the fan-out's
-- continuation (`after`, a one-job list in the flow format): it is written now, `waiting-children`
-- (released at once when there are no children), and named in the parent's counts
-- (CHILD_FIELDS.continuation), so that the call that records the last child's end releases it.
-- False when the staging is gone (it expired): nothing is committed.
local function commitFanOut(at, jobKey, id, token)
  local staged = KEY.fanStaging(at.prefix, id, token)
  local total = call('LPOP', staged)
  if not total then return false end
  local continuation
  if stringSub(total, -1) == CONTINUATION_MARK then
    total = stringSub(total, 1, -2)
    continuation = cmsgpack.unpack(call('LPOP', staged))
  end
  if call('EXISTS', staged) == 1 then
    local committed = KEY.fanned(at.prefix, id)
    call('RENAME', staged, committed)
    call('PERSIST', committed)
    call('ZADD', KEY.fanouts(at.prefix), at.nowS, id)
  end
  call('HSET', jobKey, CHILD_FIELDS.total, total, CHILD_FIELDS.running, '0', CHILD_FIELDS.success, '0',
    CHILD_FIELDS.failed, '0', CHILD_FIELDS.cancelled, '0')
  if continuation then
    local next = continuation[AT_ID]
    if writeJob(KEY.job(at.prefix, next), at.nowS, continuation, 0, WAITING_CHILDREN, false) == 1 then
      changed(next, WAITING_CHILDREN)
      waitIndex.add(at.prefix, next, nil, at.nowS)
    end
    call('HSET', jobKey, CHILD_FIELDS.continuation, next)
    if total == '0' then releaseWaiter(at.prefix, next, 'children') end
  end
  return true
end

local function finishJob(at, jobKey, id, job, outcome, payload, retryDelay, started)
  local prefix, now, nowS = at.prefix, at.now, at.nowS
  local group = job[4]
  left(job[2])
  if job[3] == '1' and outcome ~= OUTCOME_RELEASED then outcome = OUTCOME_CANCELLED end
  local passedTo
  if outcome == OUTCOME_UNHANDLED then
    passedTo, payload = unhandledRun(at, jobKey, payload)
    if not passedTo then outcome = OUTCOME_PERMANENT end
  end
  local state
  local a, n = endFields, 4
  if outcome == OUTCOME_SUCCESS then
    state = 'success'
    a[1], a[2], a[3], a[4] = 'state', state, 'finished', nowS
    if payload ~= '' then a[5], a[6], n = 'result', payload, 6 end
  elseif outcome == OUTCOME_RELEASED then
    state = 'waiting'
    a[1], a[2], a[3], a[4] = 'state', state, 'worker', ''
    call('RPUSH', KEY.groupList(prefix, group, 'r'), id)
    deferGroup(group, 'nr', 1)
  elseif passedTo then
    -- (due again at `passedTo`: promoted to waiting then, as a delayed job is)
    state = 'delayed'
    a[1], a[2], a[3], a[4], a[5], a[6], n = 'state', state, 'worker', '', 'runAt', str(passedTo), 6
    call('ZADD', KEY.delayed(prefix), str(passedTo), id)
  elseif outcome == OUTCOME_CANCELLED then
    state = 'cancelled'
    a[1], a[2], a[3], a[4] = 'state', state, 'finished', nowS
    tallyCancelled(prefix, call('HGET', jobKey, 'd'))
  elseif outcome == OUTCOME_FANNED_OUT and commitFanOut(at, jobKey, id, job[1]) then
    state = 'success'
    a[1], a[2], a[3], a[4] = 'state', state, 'finished', nowS
    if payload ~= '' then a[5], a[6], n = 'result', payload, 6 end
  else
    if outcome == OUTCOME_FANNED_OUT then
      outcome, payload = OUTCOME_FAILED, 'the children this run staged (ctx.fanOut) are gone (expired); the run is retried'
    end
    local more = call('HMGET', jobKey, 'retries', 'd', 'tracker', 'occurrence', 'started', 'worker')
    local retries = tonumber(more[1]) or 0
    local _, maxRetries = describeJob(more[2])
    if outcome == OUTCOME_FAILED and retries < (maxRetries or 0) then
      state = 'stuck'
      -- (the backoff capped, so that the due time stays a whole number a Date holds)
      local wait = retryDelay * (2 ^ retries)
      if wait > MAX_DELAY_MS then wait = MAX_DELAY_MS end
      local due = now + wait
      a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], n = 'state', state, 'retries', str(retries + 1), 'error', payload, 'due', str(due), 8
      call('ZADD', KEY.delayed(prefix), str(due), id)
      deferGroup(group, 'stuck', 1)
      -- (the run's record in the hash is overwritten by the next run: it goes to the attempts)
      keepAttempt(prefix, id, job[1], started or more[5], nowS, more[6], 'failed', payload)
    else
      state = 'failed'
      a[1], a[2], a[3], a[4], a[5], a[6], n = 'state', state, 'finished', nowS, 'error', payload, 6
      if more[3] and more[3] ~= '' then periodicFailed(id, more[3], more[4], payload) end
    end
  end
  if started then
    a[n + 1], a[n + 2], n = 'started', started, n + 2
  end
  call('HSET', jobKey, unpack(a, 1, n))
  if state == 'success' or state == 'failed' or state == 'cancelled' then
    local adds = at.adds[state]
    if not adds then
      adds = laterList(laterAdds, KEY.done(prefix, state))
      at.adds[state] = adds
    end
    local k = #adds
    adds[k + 1], adds[k + 2] = nowS, id
  end
  changed(id, state, (state == 'stuck' or state == 'failed') and payload or nil)
  -- (a group not read is one whose runs are not counted)
  if group and countsRunning(prefix, group) then deferGroup(group, 'running', -1) end
  return state
end

-- Applies what finishJob deferred: one ZREM/ZADD per set and one group update per group for the
-- whole batch, and one wake-up when any of those groups may be picked.
local function finishBatch(prefix)
  flushLater()
  if flushGroups(prefix) then wake(prefix) end
end
