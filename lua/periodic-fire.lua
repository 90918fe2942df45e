--[[
  Fires claimed periodic tasks: per task, atomically, checks the claim (compare-and-set on the
  p:nextrun score the claim set; a valid token also means the task's timer has not changed since
  the claim read it), applies the overlap policy, submits a job per occurrence with the id
  `<task id>@<occurrence ms>` (so an occurrence can never be submitted twice), records skipped and
  missed occurrences in the run history, and advances nextrun. Work is batched: one ZMSCORE for
  the tokens, one LPUSH per group list, one group update per group, one ZADD.

  Most jobs were staged ahead by periodic-stage (state `planned`, already in the run history):
  submitting one flips it to `waiting`. A job not staged (fired at once, or its stage expired or
  was dropped) is written in full from the task's fields, which a valid token means are as the
  claim read them. A skipped occurrence's planned job is dropped, and so are a lost claim's.

  Overlap is judged against the task's last job from before this call: skip (do not submit while
  it has not ended; recorded as skipped), allow, cancel-previous (submit; the caller cancels the
  previous job, whose id is returned), buffer-one (hold one occurrence in `buffered` while the
  previous run has not ended, and look at the task again every ARGV[4] ms until it has).

  KEYS[1] p:nextrun  (every key is built from ARGV[1])
  ARGV[1] key prefix
  ARGV[2] events stream max length
  ARGV[3] (unused)
  ARGV[4] buffer-one re-check interval (ms)
  ARGV[5] now (ms) from an injected clock, or '' for the server clock (job `submitted` times
          always come from the server clock)
  ARGV[6..] one record per task: a MessagePack array of REC_WIDTH (15) raw strings (built by
            the scheduler at claim time, so that firing costs it no encoding; cmsgpack reads it):
            id, claim token, trigger time being served ('' if none), new nextrun ('' when the timer
            never elapses again), period (ms from the last occurrence to the next, for tolerance;
            '' leaves it), missed count, first missed, last missed, occurrences (comma-separated,
            ascending), then the task's fields as periodic-claim read them: overlap, lastJobId,
            buffered, rule, enabled, period

  Returns { earliest p:nextrun score afterwards ('' when none), per task: 'lost' (claim gone:
            fired elsewhere, changed or removed), 'early' (first occurrence still in the future;
            nothing changed), or { jobs submitted, skipped count, job id to cancel or '' } }.
]]
--- @include "includes/common"
--- @include "includes/addJob"
--- @include "includes/periodic"

local prefix = ARGV[1]
local poll = tonumber(ARGV[4])
local serverNow = nowMs()
local now = serverNow
if ARGV[5] ~= '' then now = tonumber(ARGV[5]) end
local FINAL = { success = true, failed = true, cancelled = true }
local REC_WIDTH = 15
local JOB_FIELDS = { 'task', 'group', 'args', 'subject', 'submitter', 'priority', 'maxRetries', 'maxRuntime' }
local recs = {}
for i = 6, #ARGV do
  local f = cmsgpack.unpack(ARGV[i])
  if type(f) ~= 'table' or #f ~= REC_WIDTH then
    return redis.error_reply('ERR periodic-fire: a record must be an array of ' .. REC_WIDTH .. ' strings')
  end
  recs[#recs + 1] = f
end
local ntasks = #recs

local scores = pTokens(KEYS[1], recs)

-- Drops the planned jobs (and their history entries) of occurrences that will not be submitted.
local function unstage(id, occ)
  local jobId = id .. '@' .. occ
  if dropPlannedJob(prefix, jobId) then redis.call('ZREM', prefix .. 'p:h:' .. id, jobId) end
end

local batch = newJobBatch()
local results = {}
local added = 0
local zadds, zrems = {}, {}
for r = 1, ntasks do
  local f = recs[r]
  local id, token, triggered, newNext, period = f[1], f[2], f[3], f[4], f[5]
  local missed, missedFirst, missedLast = tonumber(f[6]), f[7], f[8]
  local occs = {}
  local list = f[9]
  if list ~= '' then
    if string.find(list, ',', 1, true) then
      for o in string.gmatch(list, '[^,]+') do occs[#occs + 1] = o end
    else
      occs[1] = list
    end
  end
  local score = scores[r]
  if not score or tonumber(score) ~= tonumber(token) then
    for _, occ in ipairs(occs) do unstage(id, occ) end
    results[#results + 1] = 'lost'
  elseif #occs > 0 and tonumber(occs[1]) > now then
    results[#results + 1] = 'early'
  else
    local tk = prefix .. 'p:t:' .. id
    local overlap, lastJobId, buffered, rule, enabled = f[10], f[11], f[12], f[13], f[14]
    local storedBuffered, storedPeriod = buffered, f[15]
    local t -- the task's job fields, read only for a job that was not staged
    local active = false
    if overlap ~= 'allow' and lastJobId ~= '' then
      local st = redis.call('HGET', prefix .. 'j:' .. lastJobId, 'state')
      active = st and not FINAL[st] or false
    end
    local previous = active and lastJobId or ''
    local submitted, skipped = 0, 0
    local lastJob = nil
    local function submit(occ)
      local jobId = id .. '@' .. occ
      local x = releaseJobLater(prefix, serverNow, jobId, batch)
      if x == false then
        if not t then
          t = redis.call('HMGET', tk, unpack(JOB_FIELDS))
          for k = 1, #JOB_FIELDS do t[k] = t[k] or '' end
        end
        x = addJobLater(prefix, serverNow, { jobId, t[1], t[2], t[3], t[4], t[5], t[6], t[7], t[8], id, occ }, batch)
        pHistory(prefix, id, occ, jobId)
      end
      added = added + x
      submitted = submitted + x
      lastJob = jobId
    end
    local function skip(occ)
      skipped = skipped + 1
      unstage(id, occ)
      pHistory(prefix, id, occ, '~skipped@' .. occ)
    end
    if missed > 0 then
      pHistory(prefix, id, missedFirst, '~missed@' .. missedFirst .. '@' .. missed .. '@' .. missedLast)
    end
    if overlap == 'buffer-one' then
      if buffered ~= '' and not active then
        submit(buffered)
        buffered = ''
        active = true
      end
      for _, occ in ipairs(occs) do
        if not active then
          submit(occ)
          active = true
        elseif buffered == '' then
          buffered = occ
        else
          skip(occ)
        end
      end
    elseif overlap == 'skip' and active then
      for _, occ in ipairs(occs) do skip(occ) end
    else
      for _, occ in ipairs(occs) do submit(occ) end
    end
    local cancel = ''
    if overlap == 'cancel-previous' and lastJob and previous ~= '' then cancel = previous end

    if newNext == '' and buffered == '' and rule ~= '' then
      -- an event rule's pending run is done: its jobs keep the tracker, the task goes
      pRemove(prefix, id)
    else
      -- only what changed: nextrun, and buffered, period, lastJobId, triggered when they did
      local fields = { 'nextrun', newNext }
      if buffered ~= storedBuffered then fields[#fields + 1] = 'buffered'; fields[#fields + 1] = buffered end
      if period ~= '' and period ~= storedPeriod then fields[#fields + 1] = 'period'; fields[#fields + 1] = period end
      if lastJob then fields[#fields + 1] = 'lastJobId'; fields[#fields + 1] = lastJob end
      if triggered ~= '' then fields[#fields + 1] = 'triggered'; fields[#fields + 1] = '' end
      redis.call('HSET', tk, unpack(fields))
      local nextScore = newNext ~= '' and tonumber(newNext) or nil
      if enabled ~= '1' and buffered == '' then nextScore = nil end
      if buffered ~= '' and (not nextScore or nextScore > now + poll) then nextScore = now + poll end
      if nextScore then
        zadds[#zadds + 1] = nextScore
        zadds[#zadds + 1] = id
      else
        zrems[#zrems + 1] = id
      end
    end
    results[#results + 1] = { submitted, skipped, cancel }
  end
end
flushJobs(prefix, batch)
for k = 1, #zadds, 1000 do redis.call('ZADD', KEYS[1], unpack(zadds, k, math.min(#zadds, k + 999))) end
for k = 1, #zrems, 1000 do redis.call('ZREM', KEYS[1], unpack(zrems, k, math.min(#zrems, k + 999))) end
if added > 0 then wake(prefix) end
flushChanges(prefix, ARGV[2])
local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
return { first[2] or '', results }
