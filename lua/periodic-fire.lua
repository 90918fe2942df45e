--[[
  Fires claimed periodic tasks: per task, atomically, checks the claim (compare-and-set on the
  p:nextrun score the claim set; a valid token also means the task's timer has not changed since
  the claim read it), applies the overlap policy, submits a job per occurrence
  with the id `<task id>@<occurrence ms>` (so an occurrence can never be submitted twice), records
  skipped and missed occurrences in the run history, and advances nextrun. Work is batched: one
  ZMSCORE for the tokens, one LPUSH per group list, one group update per group, one ZADD; and a
  task's record is one argument, so a replica sends a batch of 500 tasks as 505 arguments.

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
  ARGV[6..] one record per task, its fields joined by '|' (task ids hold no '|'):
            id|claim token|trigger time being served ('' if none)|new nextrun ('' when the timer
            never elapses again)|period (ms from the last occurrence to the next, for tolerance;
            '' leaves it)|missed count|first missed|last missed|occurrences, comma-separated, ascending

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
local TASK_FIELDS = { 'task', 'group', 'args', 'subject', 'submitter', 'priority', 'maxRetries', 'maxRuntime',
  'overlap', 'lastJobId', 'buffered', 'rule', 'enabled' }

-- Parse the records, then check every token with one ZMSCORE per 1000 tasks.
local recs = {}
for i = 6, #ARGV do
  local f = {}
  for v in string.gmatch(ARGV[i] .. '|', '([^|]*)|') do f[#f + 1] = v end
  local occs = {}
  for o in string.gmatch(f[9], '[^,]+') do occs[#occs + 1] = o end
  recs[#recs + 1] = { id = f[1], token = f[2], triggered = f[3], newNext = f[4], period = f[5],
    missed = tonumber(f[6]), missedFirst = f[7], missedLast = f[8], occs = occs }
end
local scores = {}
for k = 1, #recs, 1000 do
  local ids = {}
  for j = k, math.min(#recs, k + 999) do ids[#ids + 1] = recs[j].id end
  local got = redis.call('ZMSCORE', KEYS[1], unpack(ids))
  for j = 1, #got do scores[k + j - 1] = got[j] end
end

local batch = newJobBatch()
local results = {}
local added = 0
local zadds, zrems = {}, {}
for r, rec in ipairs(recs) do
  local id, token, triggered, newNext, period = rec.id, rec.token, rec.triggered, rec.newNext, rec.period
  local missed, missedFirst, missedLast, occs = rec.missed, rec.missedFirst, rec.missedLast, rec.occs
  local score = scores[r]
  if not score or tonumber(score) ~= tonumber(token) then
    results[#results + 1] = 'lost'
  elseif #occs > 0 and tonumber(occs[1]) > now then
    results[#results + 1] = 'early'
  else
    local tk = prefix .. 'p:t:' .. id
    local t = redis.call('HMGET', tk, unpack(TASK_FIELDS))
    local overlap, lastJobId, buffered, rule, enabled = t[9], t[10] or '', t[11] or '', t[12] or '', t[13]
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
      local x = addJobLater(prefix, serverNow, { jobId, t[1], t[2], t[3], t[4] or '', t[5] or '', t[6], t[7],
        t[8] or '', id, occ }, batch)
      added = added + x
      submitted = submitted + x
      lastJob = jobId
      pHistory(prefix, id, occ, jobId)
    end
    local function skip(occ)
      skipped = skipped + 1
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
      local fields = { 'nextrun', newNext, 'buffered', buffered }
      if period ~= '' then fields[#fields + 1] = 'period'; fields[#fields + 1] = period end
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
