--[[
  Fires claimed periodic tasks: per task, atomically, checks the claim (compare-and-set on the
  p:nextrun score the claim set), applies the overlap policy, submits a job per occurrence with
  the id `<task id>@<occurrence ms>` (so an occurrence can never be submitted twice), records
  skipped and missed occurrences in the run history, and advances nextrun.

  Overlap is judged against the task's last job from before this call: skip (do not submit while
  it has not ended; recorded as skipped), allow, cancel-previous (submit; the caller cancels the
  previous job, whose id is returned), buffer-one (hold one occurrence in `buffered` while the
  previous run has not ended, and look at the task again every ARGV[5] ms until it has).

  KEYS[1] p:nextrun  (every key is built from ARGV[1])
  ARGV[1] key prefix
  ARGV[2] events stream max length
  ARGV[3] run history: entries kept per task (-1: all)
  ARGV[4] run history: age kept (ms, -1: forever)
  ARGV[5] buffer-one re-check interval (ms)
  ARGV[6] now (ms) from an injected clock, or '' for the server clock (job `submitted` times
          always come from the server clock)
  ARGV[7..] per task: id, claim token, trigger time being served ('' if none; cleared when it
            still matches), new nextrun ('' when the timer never elapses again),
            period (ms from the last occurrence to the next, for tolerance), missed count,
            first missed, last missed, number of occurrences n, then n occurrences (ascending)

  Returns { earliest p:nextrun score afterwards ('' when none), per task: 'lost' (claim gone: fired elsewhere, changed or removed), 'early'
            (first occurrence is still in the future; nothing changed), or
            { jobs submitted, skipped count, job id to cancel or '' } } }.
]]
--- @include "includes/common"
--- @include "includes/addJob"
--- @include "includes/periodic"

local prefix = ARGV[1]
local keep, age, poll = ARGV[3], ARGV[4], tonumber(ARGV[5])
local serverNow = nowMs()
local now = serverNow
if ARGV[6] ~= '' then now = tonumber(ARGV[6]) end
local FINAL = { success = true, failed = true, cancelled = true }

local results = {}
local added = 0
local i = 7
while i <= #ARGV do
  local id, token, triggered, newNext, period = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3], ARGV[i + 4]
  local missed, missedFirst, missedLast = tonumber(ARGV[i + 5]), ARGV[i + 6], ARGV[i + 7]
  local n = tonumber(ARGV[i + 8])
  local occs = {}
  for k = 1, n do occs[k] = ARGV[i + 8 + k] end
  i = i + 9 + n

  local tk = prefix .. 'p:t:' .. id
  local score = redis.call('ZSCORE', KEYS[1], id)
  if not score or tonumber(score) ~= tonumber(token) then
    results[#results + 1] = 'lost'
  elseif n > 0 and tonumber(occs[1]) > now then
    results[#results + 1] = 'early'
  else
    local t = redis.call('HMGET', tk, 'task', 'group', 'args', 'subject', 'submitter', 'priority',
      'maxRetries', 'maxRuntime', 'overlap', 'lastJobId', 'buffered', 'rule', 'enabled', 'triggered')
    local overlap = t[9]
    local active = false
    if t[10] and t[10] ~= '' then
      local st = redis.call('HGET', prefix .. 'j:' .. t[10], 'state')
      active = st and not FINAL[st] or false
    end
    local previous = active and t[10] or ''
    local buffered = t[11] or ''
    local submitted, skipped = 0, 0
    local lastJob = nil
    local function submit(occ)
      local jobId = id .. '@' .. occ
      local a = addJob(prefix, serverNow, { jobId, t[1], t[2], t[3], t[4], t[5], t[6], t[7], t[8] or '', id, occ })
      added = added + a
      submitted = submitted + a
      lastJob = jobId
      pHistory(prefix, id, occ, jobId, keep, age, now)
    end
    local function skip(occ)
      skipped = skipped + 1
      pHistory(prefix, id, occ, '~skipped@' .. occ, keep, age, now)
    end
    if missed > 0 then
      pHistory(prefix, id, missedFirst, '~missed@' .. missedFirst .. '@' .. missed .. '@' .. missedLast, keep, age, now)
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

    if newNext == '' and buffered == '' and t[12] and t[12] ~= '' then
      -- an event rule's pending run is done: its jobs keep the tracker, the task goes
      pRemove(prefix, id)
    else
      local fields = { 'nextrun', newNext, 'period', period, 'buffered', buffered }
      if lastJob then fields[#fields + 1] = 'lastJobId'; fields[#fields + 1] = lastJob end
      if triggered ~= '' and t[14] == triggered then fields[#fields + 1] = 'triggered'; fields[#fields + 1] = '' end
      redis.call('HSET', tk, unpack(fields))
      local nextScore = newNext ~= '' and tonumber(newNext) or nil
      if t[13] ~= '1' and buffered == '' then nextScore = nil end
      -- a trigger that came in meanwhile is served at once
      if t[14] and t[14] ~= '' and t[14] ~= triggered then nextScore = now end
      if buffered ~= '' and (not nextScore or nextScore > now + poll) then nextScore = now + poll end
      if nextScore then
        redis.call('ZADD', KEYS[1], nextScore, id)
      else
        redis.call('ZREM', KEYS[1], id)
      end
    end
    results[#results + 1] = { submitted, skipped, cancel }
  end
end
if added > 0 then wake(prefix) end
flushChanges(prefix, ARGV[2])
local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
return { first[2] or '', results }
