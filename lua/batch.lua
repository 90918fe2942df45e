--[[
  A batch's producer steps (Queue.openBatch, Batch.submit, Batch.close; includes/batches):
    open   writes the batch's hash (counts at zero, its callbacks and description) unless it
           exists, and lists it in `batches` (the batches not completed) until it completes
    add    adds jobs to the batch as submit.lua adds them (an existing id is left as it is and not
           counted), each added one counted pending and listed in `btj:<batch id>`; refused, writing
           nothing, when the batch is gone, or closed and the call is not from a running job of
           the batch (its id and lease token), or completed
    close  marks the batch closed (once) and fires what is due at once (includes/batches settle):
           its callbacks, when every job has ended already
  Each step is one atomic call on the batch's shard; an add carries at most 1,000 jobs.

  KEYS[1] the batch's hash `bt:<batch id>` (every other key is built from ARGV[1])
  ARGV[1] key prefix
  ARGV[2] events stream max length
  ARGV[3] step: open | add | close
  ARGV[4] batch id
  open:  ARGV[5] onComplete (a one-job submit list, '' none), ARGV[6] onSuccess (likewise),
         ARGV[7] description
  add:   ARGV[5] number of fields per job (as submit.lua's ARGV[3]), ARGV[6] the jobs (as
         submit.lua's ARGV[4], their descriptions naming the batch), ARGV[7] the id of the batch's
         running job that adds them ('' none: the producer), ARGV[8] its lease token

  Returns { time (ms), answer }: for open 1 written | 0 it existed; for close 1 closed now | 0
  closed before | BATCH.gone; for add the answer per job (1 added, 0 its id existed), or
  BATCH.gone | BATCH.shut (closed) | BATCH.over (completed) | BATCH.stranger (the adding job does
  not run in the batch), or { time, {}, position (from 1) of the first job whose id is a planned
  periodic occurrence }.
]]
--- @include "includes/common"
--- @include "includes/changes"
--- @include "includes/groupChanges"
--- @include "includes/addJob"
--- @include "includes/batches"

local prefix, key, id = ARGV[1], KEYS[1], ARGV[4]
local step = ARGV[3]
local now = nowMs()
local nowS = str(now)

if step == 'open' then
  if call('EXISTS', key) == 1 then return { now, 0 } end
  call('HSET', key, BATCH.total, '0', BATCH.pending, '0', BATCH.success, '0', BATCH.failed, '0', BATCH.cancelled,
    '0', BATCH.opened, nowS, BATCH.description, ARGV[7])
  if ARGV[5] ~= '' then call('HSET', key, BATCH.onComplete, ARGV[5]) end
  if ARGV[6] ~= '' then call('HSET', key, BATCH.onSuccess, ARGV[6]) end
  call('PEXPIRE', key, BATCH.ttl)
  call('ZADD', KEY.batches(prefix), nowS, id)
  return { now, 1 }
end

local b = call('HMGET', key, BATCH.closed, BATCH.completed)
if not b[1] and call('EXISTS', key) == 0 then return { now, BATCH.gone } end

if step == 'close' then
  if b[1] then return { now, 0 } end
  call('HSET', key, BATCH.closed, nowS)
  batches.settle(prefix, key, id, now)
  flushChanges(prefix, ARGV[2])
  return { now, 1 }
end

-- add
if b[2] then return { now, BATCH.over } end
if ARGV[7] ~= '' then
  local j = call('HMGET', KEY.job(prefix, ARGV[7]), 'state', 'takeSeq', 'd')
  if (j[1] ~= 'running' and j[1] ~= 'scheduled') or j[2] ~= ARGV[8] or batches.of(j[3]) ~= id then
    return { now, BATCH.stranger }
  end
elseif b[1] then
  return { now, BATCH.shut }
end
local width = num(ARGV[5])
local f = cmsgpack.unpack(ARGV[6])
local jobKeys, fresh = submittedKeys(prefix, f, width)
if not jobKeys then return { now, {}, fresh } end
local jobs = newJobBatch()
local flags, added, seen = {}, {}, {}
for k, jobKey in ipairs(jobKeys) do
  local i = (k - 1) * width
  local jobId = f[i + AT_ID]
  local runAt, state
  if width > SUBMIT_WIDTH then runAt, state = dueTime(f, i, now) end
  local a = 0
  if not seen[jobId] then
    seen[jobId] = true
    a = writeJob(jobKey, nowS, f, i, state, fresh, runAt)
  end
  if a == SUBMIT_ANSWER.added then
    added[#added + 1] = jobId
    enqueueLater(prefix, jobs, jobId, f[i + AT_GROUP], f[i + AT_PRIORITY] == 'high', state and runAt)
  end
  flags[k] = a
end
if #added > 0 then
  call('HINCRBY', key, BATCH.total, #added)
  call('HINCRBY', key, BATCH.pending, #added)
  local list = KEY.batchJobs(prefix, id)
  sendChunks('RPUSH', list, added, #added, 1000)
  call('PEXPIRE', key, BATCH.ttl)
  call('PEXPIRE', list, BATCH.ttl)
end
flushSubmitted(prefix, jobs)
flushChanges(prefix, ARGV[2])
return { now, flags }
