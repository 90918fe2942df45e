--[[
  Backfills one batch of a periodic task's past occurrences (PeriodicTasks.backfill calls it
  batch by batch, in occurrence order): per occurrence, atomically, decides whether it already
  ran, and if not writes its job, enters it in the run history and in the task's backfill ledger,
  and submits it (`allow`) or queues it in the task's buffer-all backlog (`buffer-all`).
  Exactly once: an occurrence already ran when the ledger `p:bf:<id>` lists it (a backfill
  submitted it; kept as long as the task), when its job `<id>@<occurrence>` exists (the scheduler
  staged or submitted it, or a backfill did; until job retention removes it), or when the run
  history holds a job at that occurrence (within the history's retention). With `force` it is
  submitted all the same, as job `<id>@<occurrence>#<n>`: the ledger counts each occurrence's
  runs (the scheduler's as one), and n is this run's number.
  Each backfilled job has `backfill` = 1 in its hash. Since the ledger changes in the same call
  that submits, overlapping backfills (from any process) and a rerun after a crash submit each
  occurrence once.
  A buffer-all backlog `p:bq:<id>` (ZSET: p:staged member -> occurrence) is released by
  periodic-release one run at a time; this call puts its earliest member in p:staged at now (the
  backlog's turn: due at once) and wakes the schedulers.

  KEYS[1] p:nextrun  (every key is built from ARGV[1])
  ARGV[1] key prefix
  ARGV[2] events stream cap (maxEvents; <= 0: no stream)
  ARGV[3] task id
  ARGV[4] 'a' allow (submit now) | 'q' buffer-all (queue in the backlog)
  ARGV[5] '1' force | ''
  ARGV[6] now (ms) from an injected clock, or '' for the server clock (the backlog's turn)
  ARGV[7..] occurrences (ms, ascending)

  Returns { occurrences submitted or queued, occurrences that had run already } or false when
  there is no such task.
]]
--- @include "includes/common"
--- @include "includes/addJob"
--- @include "includes/changes"
--- @include "includes/periodic"

local prefix, id, mode, force = ARGV[1], ARGV[3], ARGV[4], ARGV[5] == '1'
local tk = KEY.pTask(prefix, id)
local t = call('HMGET', tk, 'task', 'group', 'args', 'subject', 'submitter', 'priority', 'maxRetries', 'maxRuntime')
if not t[1] then return false end
local serverNow = nowMs()
local now = serverNow
if ARGV[6] ~= '' then now = tonumber(ARGV[6]) end
local group, priority = t[2], t[6]
local function opt(v) if v and v ~= '' then return v end end
local description = {
  task = t[1], group = group, priority = priority, maxRetries = tonumber(t[7]),
  subject = opt(t[4]), submitter = opt(t[5]), maxRuntime = tonumber(t[8]), tracker = id,
}
local args = t[3] or ''
local ledger, hk, backlog = KEY.pBackfilled(prefix, id), KEY.pHistory(prefix, id), KEY.pBacklog(prefix, id)
local route = '|' .. (priority == 'high' and 'h' or 'l') .. group
local submittedAt = tostring(serverNow)

-- Whether occurrence `occ` (job id `jobId`) ran already: 'b' backfilled (in the ledger), 's' its
-- job exists or the run history holds a job there (the scheduler's run), or false.
local function ran(occ, jobId)
  if call('HEXISTS', ledger, occ) == 1 then return 'b' end
  if call('EXISTS', KEY.job(prefix, jobId)) == 1 then return 's' end
  for _, m in ipairs(call('ZRANGEBYSCORE', hk, occ, occ)) do
    if string.sub(m, 1, 1) ~= '~' then return 's' end
  end
  return false
end

-- a job's fields as writeJob reads them (SUBMIT_FIELDS), and its tracker and occurrence
local fields = {}
local AT_DESCRIPTION
for k = 1, #SUBMIT_FIELDS do
  if SUBMIT_FIELDS[k] == 'description' then AT_DESCRIPTION = k end
end
fields[AT_GROUP], fields[AT_PRIORITY] = group, priority
local periodic = { tracker = id }
local batch = newJobBatch()
local done, already = 0, 0
local history, queued = {}, {}
for i = 7, #ARGV do
  local occ = ARGV[i]
  local jobId = id .. '@' .. occ
  local before = ran(occ, jobId)
  if before and not force then
    already = already + 1
  else
    -- the ledger counts the occurrence's runs (the scheduler's as one); a rerun's job id has its number
    local n = call('HINCRBY', ledger, occ, before == 's' and 2 or 1)
    if n > 1 then jobId = jobId .. '#' .. n end
    description.occurrence = tonumber(occ)
    fields[AT_ID], fields[AT_DESCRIPTION] = jobId, packDescription(description, args)
    periodic.occurrence = occ
    local jobKey = KEY.job(prefix, jobId)
    -- (unchecked for a first run: ran() found no job of that id)
    local unchecked = n == 1
    if writeJob(jobKey, submittedAt, fields, 0, mode == 'q' and 'planned' or 'waiting', unchecked, nil, periodic) == 1 then
      call('HSET', jobKey, 'backfill', '1')
      history[#history + 1] = occ
      history[#history + 1] = jobId
      if mode == 'q' then
        queued[#queued + 1] = occ
        queued[#queued + 1] = 'q' .. jobId .. route
      else
        enqueueLater(prefix, batch, jobId, group, priority == 'high')
      end
      done = done + 1
    else
      already = already + 1
    end
  end
end
if #history > 0 then call('ZADD', hk, unpack(history)) end
if #queued > 0 then
  call('ZADD', backlog, unpack(queued))
  -- the backlog's turn: its earliest member, due now (periodic-release takes it from there)
  local first = call('ZRANGE', backlog, 0, 0)
  call('ZADD', KEY.pStaged(prefix), now, first[1])
  pWake(prefix)
end
flushJobs(prefix, batch)
if mode ~= 'q' and done > 0 then wake(prefix) end
flushChanges(prefix, ARGV[2])
return { done, already }
