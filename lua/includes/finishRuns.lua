--[[
  What finish.lua keeps at the library's level, defined once when the library loads rather than
  on every call: the outcomes of runs whose start was not sent (the codes themselves come from
  includes/wire), the lease members a call's runs claim and how they are removed, and the tables
  a call fills and empties (reused across calls).
]]
--- @include "includes/wire"
--- @include "includes/common"
--- @include "includes/changes"
--- @include "includes/setWrites"
--- @include "includes/jobKeys"
--- @export UNSTARTED, claimLeases, dropLeases, verifiedJob, states, ended, trimFinished

-- The outcome of a run whose start was not sent, by its code ('+s' ends as 's').
-- (built as the library loads, when Lua's ipairs and pairs are not reachable yet)
local UNSTARTED = {}
local OUTCOMES = {
  OUTCOME_SUCCESS, OUTCOME_FAILED, OUTCOME_PERMANENT, OUTCOME_CANCELLED, OUTCOME_RELEASED, OUTCOME_FANNED_OUT, OUTCOME_UNHANDLED,
}
for i = 1, #OUTCOMES do UNSTARTED[UNSTARTED_PREFIX .. OUTCOMES[i]] = OUTCOMES[i] end

-- The lease members the runs claim (reused: the library keeps it across calls).
local claimed = {}

-- Removes the lease members `runs` claim (a run whose start was not sent claims the job is
-- scheduled, any other that it runs); true when every one was there.
local function claimLeases(prefix, runs)
  local n = 0
  for i = 1, #runs, RUN_WIDTH do
    n = n + 1
    claimed[n] = runs[i + 1] .. (UNSTARTED[runs[i + 2]] and SCHEDULED_MARK or RUNNING_MARK) .. runs[i]
  end
  for i = #claimed, n + 1, -1 do claimed[i] = nil end
  local removed, key = 0, KEY.leases(prefix)
  for i = 1, n, 500 do removed = removed + call('ZREM', key, unpack(claimed, i, math.min(n, i + 499))) end
  return removed == n
end

-- Removes (with the batch's other set writes) the member of `leases` the run of job `id` with
-- lease `token` may have, under each mark.
local function dropLeases(prefix, id, token)
  local rems = laterList(laterRems, KEY.leases(prefix))
  local n = #rems
  rems[n + 1], rems[n + 2], rems[n + 3] = token .. SCHEDULED_MARK .. id, token .. RUNNING_MARK .. id, token .. CANCEL_MARK .. id
end

-- The job of a run whose lease was verified: what the job hash would answer (reused).
local verifiedJob = {}

-- The end codes of the runs, and the states some run ended in (reused: the library keeps them).
local states, ended = {}, {}

-- Trims a finished-state set to `keep` jobs once it runs over by more than a twentieth of
-- `keep` (so that a large set is trimmed in steps of many jobs, not one per call), removing at
-- most 200 per call.
local function trimFinished(prefix, state, keep)
  keep = num(keep)
  if keep < 0 then return end
  local key = KEY.done(prefix, state)
  local excess = call('ZCARD', key) - keep
  if excess <= math.floor(keep / 20) then return end
  if excess > 200 then excess = 200 end
  local ids = call('ZRANGE', key, '0', str(excess - 1))
  local doomed = addJobKeys({}, prefix, ids, crossDeliveredHere(prefix))
  if #doomed > 0 then call('DEL', unpack(doomed)) end
  call('ZREMRANGEBYRANK', key, '0', str(excess - 1))
  countDelta[state] = (countDelta[state] or 0) - #ids
end
