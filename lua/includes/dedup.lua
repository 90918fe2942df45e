--[[
  Deduplication (a submit's `dedup`, see docs/jobs.md). A job submitted with dedup key `key` in
  group `group` holds the key `dd:<byte length of group>:<group><key>` (dedupKeyOf: the length
  makes the pair exact, whatever either holds), a STRING whose value is the holder's DEDUP_UNTIL
  code and its job id, with the dedup TTL as its expiry when it has one. The holder's hash keeps
  the code (`ddm`) and the expiry time (`ddx`, ms); its description the key (`dedupKey`), so its
  executor knows which runs hold one (finish.lua ARGV[15]).

  The key holds while its holder exists and is in a state its code holds for (holding): `s`
  waiting or delayed, `e` not ended, `t` any. A submit that finds it holding adds no job and
  answers the holder (dedupJob); one that finds it free or stale (its holder gone, or past the
  states it held for) takes it over. So whatever a key's value, the answer is the exact one.
  The key is deleted when its holder ends (codes `s` and `e`: finish, cancel, recovery), or is
  deleted (delete, clean), while it still names that job (releaseDedup); a `t` key outlives its
  job's end until its TTL, by design (throttle).
]]
--- @include "includes/wire"
--- @include "includes/common"
--- @include "includes/changes"
--- @include "includes/jobs"
--- @include "includes/addJob"
--- @export dedupSpecs, dedupJob, releaseDedupOf, releaseRuns, arriveDedup

local PENDING = { waiting = true, delayed = true }
local FINAL = { success = true, failed = true, cancelled = true }
local UNTIL_START, UNTIL_END, UNTIL_TTL = DEDUP_UNTIL.start, DEDUP_UNTIL['end'], DEDUP_UNTIL.ttl

-- Where each field of a dedup entry lies (DEDUP_FIELDS), past the entry's offset.
local AT_POSITION, AT_KEY, AT_UNTIL, AT_TTL, AT_DEBOUNCE
-- and where a job's description lies in a submitted list (SUBMIT_FIELDS)
local DESCRIPTION_AT
for k = 1, #SUBMIT_FIELDS do
  if SUBMIT_FIELDS[k] == 'description' then DESCRIPTION_AT = k end
end
do
  local at = {}
  for k = 1, #DEDUP_FIELDS do at[DEDUP_FIELDS[k]] = k end
  AT_POSITION, AT_KEY, AT_UNTIL, AT_TTL, AT_DEBOUNCE = at.at, at.key, at['until'], at.ttl, at.debounce
end

local function dedupKeyOf(prefix, group, key)
  return KEY.dedup(prefix, #group, group, key)
end

-- A submit's dedup list (ARGV[5], DEDUP_FIELDS per entry) by job position:
-- { key, code, ttl (number or nil), replace, extend }.
local function dedupSpecs(list)
  local f = cmsgpack.unpack(list)
  local out = {}
  for i = 0, #f - 1, #DEDUP_FIELDS do
    local debounce = f[i + AT_DEBOUNCE]
    out[tonumber(f[i + AT_POSITION])] = {
      key = f[i + AT_KEY],
      code = f[i + AT_UNTIL],
      ttl = tonumber(f[i + AT_TTL]),
      replace = string.find(debounce, 'r', 1, true) ~= nil,
      extend = string.find(debounce, 'x', 1, true) ~= nil,
    }
  end
  return out
end

-- The holder's id and state when `held` (a key's value) still holds, else nil.
local function holding(prefix, held)
  local code, id = stringSub(held, 1, 1), stringSub(held, 2)
  local state = call('HGET', KEY.job(prefix, id), 'state')
  if not state or state == 'planned' then return nil end
  if code == UNTIL_TTL or (code == UNTIL_END and not FINAL[state]) or (code == UNTIL_START and PENDING[state]) then
    return id, state
  end
  return nil
end

-- dedup.replace: the pending holder `id` (in `state`) takes the description of the job at offset
-- i of f, and, when delayed, its due time `runAt` (none or past: it waits now, at the back of its
-- list). A waiting holder keeps its place, and is replaced only when the priorities match.
-- Answers the answer, and the state the holder is in afterwards. Its move is noted in `batch`
-- (for flushSubmitted's wake-up) as a submitted job's is.
local function replaceHolder(prefix, batch, id, state, f, i, runAt, now)
  local jobKey = KEY.job(prefix, id)
  local d = f[i + DESCRIPTION_AT]
  if state == 'waiting' then
    if describeJob(call('HGET', jobKey, 'd')) ~= f[i + AT_PRIORITY] then return SUBMIT_ANSWER.deduplicated, state end
    call('HSET', jobKey, 'd', d)
    return SUBMIT_ANSWER.replaced, state
  end
  if runAt and runAt > now then
    call('HSET', jobKey, 'd', d, 'runAt', str(runAt))
    call('ZADD', KEY.delayed(prefix), str(runAt), id)
    delayedUntil(batch, runAt)
    return SUBMIT_ANSWER.replaced, state
  end
  call('ZREM', KEY.delayed(prefix), id)
  call('HSET', jobKey, 'd', d, 'state', 'waiting')
  call('HDEL', jobKey, 'runAt')
  left('delayed')
  enqueueLater(prefix, batch, id, f[i + AT_GROUP], f[i + AT_PRIORITY] == 'high')
  return SUBMIT_ANSWER.replaced, 'waiting'
end

-- Submits the job at offset i of f (SUBMIT_FIELDS) under key `jobKey` with dedup `d` (of
-- dedupSpecs), in `state` (nil: waiting) with due time `runAt`: unless its id exists (answers
-- SUBMIT_ANSWER.existed), or its key holds (answers SUBMIT_ANSWER.deduplicated or SUBMIT_ANSWER.replaced, and the holder's
-- id), it is written and holds the key (answers
-- SUBMIT_ANSWER.added; the caller lists it, as any job written).
local function dedupJob(prefix, batch, jobKey, f, i, state, runAt, d, submitted, now)
  if call('EXISTS', jobKey) == 1 then return SUBMIT_ANSWER.existed end
  local ddKey = dedupKeyOf(prefix, f[i + AT_GROUP], d.key)
  local held = call('GET', ddKey)
  local holder, holderState
  if held then holder, holderState = holding(prefix, held) end
  if holder then
    if d.extend then
      call('PEXPIRE', ddKey, str(d.ttl))
      call('HSET', KEY.job(prefix, holder), 'ddx', str(now + d.ttl))
    end
    if d.replace and PENDING[holderState] then
      local answer, after = replaceHolder(prefix, batch, holder, holderState, f, i, runAt, now)
      deduplicated(holder, after, d.key, answer == SUBMIT_ANSWER.replaced)
      return answer, holder
    end
    deduplicated(holder, holderState, d.key, false)
    return SUBMIT_ANSWER.deduplicated, holder
  end
  local id = f[i + AT_ID]
  writeJob(jobKey, submitted, f, i, state, true, runAt)
  if d.ttl then
    call('SET', ddKey, d.code .. id, 'PX', str(d.ttl))
    call('HSET', jobKey, 'dd', d.key, 'ddm', d.code, 'ddx', str(now + d.ttl))
  else
    call('SET', ddKey, d.code .. id)
    call('HSET', jobKey, 'dd', d.key, 'ddm', d.code)
  end
  return SUBMIT_ANSWER.added
end

-- Deletes the dedup key `key` of group `group` when job `id` holds it; `ended`: the job ended,
-- which leaves a throttle's key (code t) to its TTL.
local function releaseDedup(prefix, group, key, id, ended)
  local ddKey = dedupKeyOf(prefix, group, key)
  local held = call('GET', ddKey)
  if held and stringSub(held, 2) == id and not (ended and stringSub(held, 1, 1) == UNTIL_TTL) then
    call('DEL', ddKey)
  end
end

-- releaseDedup for job `id` read from its hash (the paths that are no hot path: cancel, delete,
-- clean, recovery); nothing when it has no dedup key.
local function releaseDedupOf(prefix, id, ended)
  local job = call('HMGET', KEY.job(prefix, id), 'dd', 'group')
  if job[1] and job[2] then releaseDedup(prefix, job[2], job[1], id, ended) end
end

-- finish.lua: releases the dedup keys of the runs listed in `list` (its ARGV[15]: flat, the
-- run's number in `runs` from 1, its group, its key) that ended (their end code in `codes`).
local ENDED = { [END_CODES.success] = true, [END_CODES.failed] = true, [END_CODES.cancelled] = true }
local function releaseRuns(prefix, list, runs, codes)
  local listed = cmsgpack.unpack(list)
  for k = 1, #listed, 3 do
    local n = tonumber(listed[k])
    if ENDED[codes[n]] then releaseDedup(prefix, listed[k + 1], listed[k + 2], runs[(n - 1) * RUN_WIDTH + 1], true) end
  end
end

-- reshard-in.lua: job `id`, just copied here from another shard, takes its dedup key here when
-- it has one that still holds (its state, its expiry `ddx`) and no other job holds it here.
local function arriveDedup(prefix, id, now)
  local job = call('HMGET', KEY.job(prefix, id), 'dd', 'ddm', 'ddx', 'group')
  if not (job[1] and job[2] and job[4]) then return end
  local value = job[2] .. id
  if not holding(prefix, value) then return end
  local ddKey = dedupKeyOf(prefix, job[4], job[1])
  local expiry = tonumber(job[3])
  if not expiry then
    call('SET', ddKey, value, 'NX')
  elseif expiry > now then
    call('SET', ddKey, value, 'NX', 'PX', str(expiry - now))
  end
end
