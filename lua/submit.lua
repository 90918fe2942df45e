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
local jobKeys, fresh = submittedKeys(prefix, f, width)
if not jobKeys then return { now, {}, fresh } end
local submitted = str(now)
local batch = newJobBatch()
local flags, seen = {}, {}
-- (jobs with a dedup key, by position; see includes/dedup)
local dedups, holders = ARGV[5] and dedupSpecs(ARGV[5]), nil
for k, key in ipairs(jobKeys) do
  local i = (k - 1) * width
  local id = f[i + AT_ID]
  local runAt, state
  if width > SUBMIT_WIDTH then runAt, state = dueTime(f, i, now) end
  local a
  local dedup = dedups and dedups[k]
  if dedup then
    local holder
    a, holder = dedupJob(prefix, batch, key, f, i, state, runAt, dedup, submitted, now)
    seen[id] = true
    if holder then
      holders = holders or {}
      holders[#holders + 1], holders[#holders + 2] = k, holder
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
    enqueueLater(prefix, batch, id, f[i + AT_GROUP], f[i + AT_PRIORITY] == 'high', state and runAt)
  end
  flags[k] = a
end
flushSubmitted(prefix, batch)
flushChanges(prefix, ARGV[2])
if holders then return { now, flags, false, holders } end
return { now, flags }
