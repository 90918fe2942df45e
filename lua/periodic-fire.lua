--[[
  Fires claimed periodic tasks: per task, atomically, checks the claim (compare-and-set on the
  p:nextrun score the claim set; a valid token also means the task has not changed since the
  claim read the fields passed here), applies the overlap policy, submits a job per occurrence
  with the id `<task id>@<occurrence ms>` (so an occurrence can never be submitted twice), records
  skipped and missed occurrences in the run history, and advances nextrun. Work is batched: one
  ZMSCORE for the tokens, one LPUSH per group list, one group update per group, one ZADD.

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
  ARGV[6..] per task, FIELDS values then n occurrences (ascending):
            id, claim token, trigger time being served ('' if none), new nextrun ('' when the
            timer never elapses again), period (ms from the last occurrence to the next, for
            tolerance; '' leaves it), missed count, first missed, last missed, then as the claim read them:
            overlap, lastJobId, buffered, rule, enabled, task, group, args, subject, submitter,
            priority, maxRetries, maxRuntime; then n, then the n occurrences.

  Returns { earliest p:nextrun score afterwards ('' when none), per task: 'lost' (claim gone:
            fired elsewhere, changed or removed), 'early' (first occurrence still in the future;
            nothing changed), or { jobs submitted, skipped count, job id to cancel or '' } }.
]]
--- @include "includes/common"
--- @include "includes/addJob"
--- @include "includes/periodic"

local WIDTH = 21
local prefix = ARGV[1]
local poll = tonumber(ARGV[4])
local serverNow = nowMs()
local now = serverNow
if ARGV[5] ~= '' then now = tonumber(ARGV[5]) end
local FINAL = { success = true, failed = true, cancelled = true }

-- Parse the records, then check every token with one ZMSCORE per 1000 tasks.
local recs = {}
local i = 6
while i <= #ARGV do
  local n = tonumber(ARGV[i + WIDTH])
  recs[#recs + 1] = { at = i, n = n }
  i = i + WIDTH + 1 + n
end
local scores = {}
for k = 1, #recs, 1000 do
  local ids = {}
  for j = k, math.min(#recs, k + 999) do ids[#ids + 1] = ARGV[recs[j].at] end
  local got = redis.call('ZMSCORE', KEYS[1], unpack(ids))
  for j = 1, #got do scores[k + j - 1] = got[j] end
end

local batch = newJobBatch()
local results = {}
local added = 0
local zadds, zrems = {}, {}
for r, rec in ipairs(recs) do
  local a = rec.at
  local id, token, triggered, newNext, period = ARGV[a], ARGV[a + 1], ARGV[a + 2], ARGV[a + 3], ARGV[a + 4]
  local missed, missedFirst, missedLast = tonumber(ARGV[a + 5]), ARGV[a + 6], ARGV[a + 7]
  local overlap, lastJobId, buffered, rule, enabled = ARGV[a + 8], ARGV[a + 9], ARGV[a + 10], ARGV[a + 11], ARGV[a + 12]
  local occs = {}
  for k = 1, rec.n do occs[k] = ARGV[a + WIDTH + k] end
  local score = scores[r]
  if not score or tonumber(score) ~= tonumber(token) then
    results[#results + 1] = 'lost'
  elseif rec.n > 0 and tonumber(occs[1]) > now then
    results[#results + 1] = 'early'
  else
    local tk = prefix .. 'p:t:' .. id
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
      local x = addJobLater(prefix, serverNow, { jobId, ARGV[a + 13], ARGV[a + 14], ARGV[a + 15], ARGV[a + 16],
        ARGV[a + 17], ARGV[a + 18], ARGV[a + 19], ARGV[a + 20], id, occ }, batch)
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
