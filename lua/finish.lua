--[[
  Acknowledges a batch of finished runs. A run whose lease token no longer matches the job
  (its lease expired and the job was recovered or taken over) is refused and left unchanged.
  A repeat of a finish already applied with the same token (resent by the client after a
  reconnect) changes nothing and answers the state the job ended in.
  The runs' leases are removed first, by the members their runs claim (see `leases` in
  includes/leases: token, mark of the state the outcome code says, id). When every member was
  there, each run holds its lease in that state with no cancel requested, and no job hash is
  read to check it; otherwise each run is checked against its job hash (a cancel request, a
  start that was sent but not applied, a repeat) and the lease members of those accepted are
  removed under whichever mark they have.
  Finished-state sets are trimmed to their keep counts in bounded steps.
  Then, when ARGV[6] > 0, it takes up to that many jobs for the executor (see includes/take), so
  that the slots the runs freed are filled in the same call.

  KEYS[1] leases   (every key is built from ARGV[1])
  ARGV[1] key prefix
  ARGV[2] events stream max length
  ARGV[3] retry delay base (ms): a failed run waits retryDelay * 2^retries
  ARGV[4] keep count for success (-1: keep all)
  ARGV[5] keep count for failed and cancelled (-1: keep all)
  ARGV[6] most jobs to take afterwards (0: none)
  ARGV[7] executor id
  ARGV[8] counting scheme: high count
  ARGV[9] counting scheme: low count
  ARGV[10] lease (ms)
  ARGV[11] the runs, as one MessagePack array of strings, flat, four per run: job id, lease
           token, outcome (s|f|p|c|r), payload (result or error); an outcome prefixed with '+'
           (e.g. '+s') is of a run whose start was not sent: the run is marked started
           (`running`, its events and count) before it ends, as start.lua would (never a
           periodic run's: those wait for their start's answer). Outcome 'o' is a success whose
           run staged children: they are committed with it (see includes/finishJob), or, when the
           staging is gone, the run fails. Outcome 'u': the executor has no handler for the
           job's task, the payload its unknownTaskGraceMs (see includes/unhandled).
  ARGV[12] how many of the runs, the last ones, are runs of fan-out children (their parents count
           them, see includes/children)
  ARGV[13] the runs' history counts (see includes/history), or '' for none
  ARGV[14] the runs of periodic tasks, as one MessagePack array of strings, flat, two per run:
           its number in ARGV[11] (from 1) and its task id; or '' (or absent) for none. A task
           whose run ended is told (includes/periodic pRunEnded), so that a buffer-all backlog
           releases its next run now
  ARGV[15] (absent when none, '' when ARGV[16] follows) the runs of jobs with a dedup key, as one
           MessagePack array of strings, flat, three per run: its number in ARGV[11] (from 1), its
           group and its key; the keys of those that ended are released (see includes/dedup)
  ARGV[16] (absent when none) the runs of batch jobs, as one MessagePack array of strings, flat,
           two per run: its number in ARGV[11] (from 1) and its batch id; their batches count
           those that ended (see includes/batches)

  Returns { finished time (ms), the end state of each run as one string of a character a run
            (END_CODES: s success, w waiting, c cancelled, k stuck, f failed, d delayed (an
            unhandled run passed on), - refused), jobs
            taken (see includes/take), next due time in `delayed` (ms) or -1 }.
]]
--- @include "includes/common"
--- @include "includes/changes"
--- @include "includes/groups"
--- @include "includes/setWrites"
--- @include "includes/finishJob"
--- @include "includes/take"
--- @include "includes/finishRuns"
--- @include "includes/children"
--- @include "includes/history"
--- @include "includes/periodic"
--- @include "includes/dedup"
--- @include "includes/batches"

local prefix = ARGV[1]
local retryDelay = num(ARGV[3])
local now = nowMs()
clearList(states)
for state in pairs(ended) do ended[state] = nil end
local runs = cmsgpack.unpack(ARGV[11])
local at = beginFinishes(prefix, now)
local limited = hasLimits(prefix)
local verified = claimLeases(prefix, runs)
local childFrom = #runs - RUN_WIDTH * num(ARGV[12]) + 1
-- (batch runs: run number -> batch id)
local batchOf = ARGV[16] and batches.runs(ARGV[16])
for i = 1, #runs, RUN_WIDTH do
  local id, token = runs[i], runs[i + 1]
  local outcome = runs[i + 2]
  local unstarted = UNSTARTED[outcome]
  if unstarted then outcome = unstarted end
  local jobKey = KEY.job(prefix, id)
  local job
  if verified then
    job = verifiedJob
    job[1], job[2], job[3], job[4] = token, unstarted and 'scheduled' or 'running', false, nil
    if GROUP_READ[outcome] or limited then job[4] = call('HGET', jobKey, 'group') end
  elseif GROUP_READ[outcome] or limited then
    job = call('HMGET', jobKey, 'takeSeq', 'state', 'cancel', 'group')
  else
    job = call('HMGET', jobKey, 'takeSeq', 'state', 'cancel')
  end
  if job[1] == token and (job[2] == 'running' or job[2] == 'scheduled') then
    if not verified then dropLeases(prefix, id, token) end
    local started
    -- (an unhandled run never began: nothing of it is marked started)
    if unstarted and job[2] == 'scheduled' and outcome ~= OUTCOME_UNHANDLED then
      -- its start, as start.lua applies it (the end state written next replaces `running`)
      started = at.nowS
      left('scheduled')
      changed(id, 'running')
      job[2] = 'running'
    end
    local state = finishJob(at, jobKey, id, job, outcome, runs[i + 3], retryDelay, started)
    states[#states + 1] = END_CODES[state]
    ended[state] = true
    -- (a child's run counted as running unless this call applied its start)
    if i >= childFrom then childEnded(id, started == nil and job[2] == 'running', state) end
    if batchOf then batches.ended(batchOf[(i - 1) / RUN_WIDTH + 1], state) end
  elseif job[1] == token and (job[2] == 'success' or (job[2] == 'waiting' and outcome == OUTCOME_RELEASED and call('HGET', jobKey, 'worker') == '')) then
    -- A repeat of this run's finish, already applied (the client resent it after a reconnect):
    -- only this script ends a run with this token as success, or released (worker cleared).
    states[#states + 1] = END_CODES[job[2]]
  else
    states[#states + 1] = END_REFUSED
  end
end
finishBatch(prefix)
if childFrom <= #runs then flushChildren(prefix, now) end
if batchOf then batches.flush(prefix, now) end
addHistory(prefix, now, ARGV[13] or '')
if ARGV[14] and ARGV[14] ~= '' then
  local tracked = cmsgpack.unpack(ARGV[14])
  for k = 1, #tracked, 2 do
    local code = states[tonumber(tracked[k])]
    if code == END_CODES.success or code == END_CODES.failed or code == END_CODES.cancelled then
      pRunEnded(prefix, tracked[k + 1])
    end
  end
end
if ARGV[15] and ARGV[15] ~= '' then releaseRuns(prefix, ARGV[15], runs, states) end
-- A stuck job (or one passed on, delayed) is not runnable yet, so nobody was woken for it: wake
-- one executor, whose take finds nothing due and answers the next due time, so it sleeps until
-- the retry instead of until its fallback timer.
if ended['stuck'] or ended['delayed'] then wake(prefix) end
if ended['success'] then trimFinished(prefix, 'success', ARGV[4]) end
if ended['failed'] then trimFinished(prefix, 'failed', ARGV[5]) end
if ended['cancelled'] then trimFinished(prefix, 'cancelled', ARGV[5]) end
local jobs, nextDue = EMPTY, -1
local n = num(ARGV[6])
if n > 0 then
  jobs, nextDue = takeJobs(prefix, ARGV[7], n, num(ARGV[8]), num(ARGV[9]), num(ARGV[10]), now)
end
flushChanges(prefix, ARGV[2])
return { now, table.concat(states), jobs, nextDue }
