--[[
  Submits a batch of jobs: each is added in state `waiting` unless its id exists (idempotent
  submit), its group joins the round-robin rotation, and idle executors are woken. A job with a
  due time still to come is added in state `delayed` instead, in `delayed` (score: its due time
  by the server's clock), where the take promotes it (see promoteDue in includes/take); an idle
  executor is woken when it is due before anything else there, so that it sleeps until then.

  KEYS[1] marker   (prefix .. 'marker'; every other key is built from ARGV[1])
  ARGV[1] key prefix '{rota:<queue>}:'
  ARGV[2] events stream max length (0: no events)
  ARGV[3] number of fields per job: SUBMIT_WIDTH (4), or all of SUBMIT_FIELDS (5) when some job
          has a due time
  ARGV[4] the jobs, as one MessagePack array of strings, flat, in the order of SUBMIT_FIELDS: per
          job id, description, group, priority (see includes/addJob), with 5 fields its due time
          ('' none; ms, or DELAY_MARK and a delay in ms).
          One argument instead of one per field spares the client and the server an argument each.
  ARGV[5] (absent when no job of the call has one) the jobs' dedup keys, as one MessagePack array
          of strings, flat, DEDUP_FIELDS per job that has one (see includes/dedup)

  Returns { submitted time (ms), answer per job (1 added, 0 its id existed, 2 deduplicated, 3
  deduplicated and the holder replaced), and with dedup keys false and, flat, the position (from
  1) and holder's id of each job deduplicated }; or, writing nothing,
  { submitted time, {}, position (from 1) of the first job whose id is a planned periodic
  occurrence (staged ahead, not submitted yet): that id is reserved for it }.
]]
--- @include "includes/common"
--- @include "includes/changes"
--- @include "includes/groupChanges"
--- @include "includes/addJob"
--- @include "includes/dedup"

local prefix = ARGV[1]
local width = num(ARGV[3])
local f = cmsgpack.unpack(ARGV[4])
local now = nowMs()
local submitted = str(now)
local batch = newJobBatch()
local flags = {}
-- One EXISTS for the whole batch: when none of its ids exists (the usual case), a job needs no
-- check of its own, only one against an id repeated inside the batch.
local jobKeys = {}
for i = 0, #f - 1, width do jobKeys[#jobKeys + 1] = KEY.job(prefix, f[i + AT_ID]) end
local fresh = true
for i = 1, #jobKeys, 1000 do
  if call('EXISTS', unpack(jobKeys, i, math.min(#jobKeys, i + 999))) > 0 then fresh = false break end
end
if not fresh then
  for k, key in ipairs(jobKeys) do
    if call('HGET', key, 'state') == 'planned' then return { now, {}, k } end
  end
end
-- The due time of the job at offset i (ms), or nil: none given (a call with due times only).
local function dueTime(i)
  local at = f[i + AT_RUN_AT]
  if at == '' then return nil end
  if stringSub(at, 1, 1) == DELAY_MARK then return now + tonumber(stringSub(at, 2)) end
  return tonumber(at)
end
local seen = {}
local enqueued, earliest = 0, nil
-- (jobs with a dedup key, by position; see includes/dedup)
local dedups, holders = ARGV[5] and dedupSpecs(ARGV[5]), nil
for k, key in ipairs(jobKeys) do
  local i = (k - 1) * width
  local id = f[i + AT_ID]
  local runAt, state
  if width > SUBMIT_WIDTH then
    runAt = dueTime(i)
    if runAt and runAt > now then state = 'delayed' end
  end
  local a
  local dedup = dedups and dedups[k]
  if dedup then
    local holder, due
    a, holder, due = dedupJob(prefix, batch, key, f, i, state, runAt, dedup, submitted, now)
    seen[id] = true
    if holder then
      holders = holders or {}
      holders[#holders + 1], holders[#holders + 2] = k, holder
      if due == true then enqueued = enqueued + 1 elseif due and (not earliest or due < earliest) then earliest = due end
    end
  elseif not fresh then
    a = writeJob(key, submitted, f, i, state, false, runAt)
  elseif seen[id] then
    a = 0
  else
    seen[id] = true
    a = writeJob(key, submitted, f, i, state, true, runAt)
  end
  if a == SUBMIT_ANSWER.added then
    if state then
      call('ZADD', KEY.delayed(prefix), str(runAt), id)
      changed(id, 'delayed')
      if not earliest or runAt < earliest then earliest = runAt end
    else
      enqueueLater(prefix, batch, id, f[i + AT_GROUP], f[i + AT_PRIORITY] == 'high')
      enqueued = enqueued + 1
    end
  end
  flags[k] = a
end
flushJobs(prefix, batch)
if enqueued > 0 then wake(prefix) end
-- (an executor sleeps until the head of `delayed`: one is woken to learn of an earlier one)
if earliest and not woken then
  local head = call('ZRANGE', KEY.delayed(prefix), '0', '0', 'WITHSCORES')
  if tonumber(head[2]) == earliest then wake(prefix) end
end
flushChanges(prefix, ARGV[2])
if holders then return { now, flags, false, holders } end
return { now, flags }
