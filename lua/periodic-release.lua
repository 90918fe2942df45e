--[[
  Releases staged periodic occurrences whose time has come (see periodic-stage), oldest first,
  applying each one's overlap policy against its task's last submitted job from before this call
  (a job that fanned out has not ended until its children have):
    a allow            submit
    s skip             submit unless the last job has not ended; else skip (recorded as skipped)
    c cancel-previous  submit; the caller cancels the last job when it has not ended (returned)
    b buffer-one       submit when the last job has ended; else hold this one (looked at again
                       every ARGV[5] ms, in p:staged) while no other is held, and skip it when one is
    q buffer-all       enter it in the task's backlog p:bq:<id> (by occurrence); then each backlog
                       this call touched submits its earliest run when the task's last job has
                       ended and the task is enabled (a removed task's backlog is dropped), and
                       keeps its earliest member in p:staged, looked at again every ARGV[5] ms
                       (a member already in the backlog is that turn: no catch-up applies to it)
  (an upper-case code: the same, for an event rule's pending-run task whose last run this is; the
  task goes once the run is released, and its run history expires ARGV[7] ms later).
  Submitting flips the planned job to `waiting` and pushes it into its group. An occurrence that
  was more than ARGV[6] ms (the misfire grace) past its due time (its p:staged score: the
  occurrence, or later with jitter) when the schedulers resumed after a pause longer than the
  grace (no replica claimed or released meanwhile: pLive) follows its task's catch-up policy: `none` drops
  it as missed, `latest` keeps only the newest such occurrence of the task (and none when the
  task's next occurrence is past as well, since planning that one submits the latest), `all`
  keeps those within the task's catchupWindow. One that is late only because the schedulers are
  behind (more due than the replicas release, claims and releases never pausing that long) is
  submitted: the schedulers were busy, not down.
  Any replica may call this at any time; each staged occurrence is released once, as this call
  takes it out of p:staged.

  KEYS[1] p:staged  (every key is built from ARGV[1])
  ARGV[1] key prefix
  ARGV[2] events stream max length
  ARGV[3] now (ms) from an injected clock, or '' for the server clock (job `submitted` times
          always come from the server clock)
  ARGV[4] most occurrences to release in this call
  ARGV[5] buffer-one re-check interval (ms)
  ARGV[6] misfire grace (ms)
  ARGV[7] run history age (ms, -1: forever): how long a released event-rule run's history outlives
          its task (so that an older event arriving late is still recognised as older)

  Returns { earliest p:staged score afterwards ('' when none), jobs submitted, occurrences
            skipped, ids of jobs to cancel (cancel-previous), per job task and outcome the
            occurrences (flat: task, 's' submitted | 'k' skipped | 'm' missed, n, ...) }.
]]
--- @include "includes/wire"
--- @include "includes/common"
--- @include "includes/jobs"
--- @include "includes/changes"
--- @include "includes/groupChanges"
--- @include "includes/addJob"
--- @include "includes/periodic"

local prefix = ARGV[1]
local serverNow = nowMs()
local submittedAt = tostring(serverNow)
local now = serverNow
if ARGV[3] ~= '' then now = tonumber(ARGV[3]) end
local poll = tonumber(ARGV[5])
local grace = tonumber(ARGV[6])
local FINAL = { success = true, failed = true, cancelled = true }
local lastKey, bufKey = KEY.pLast(prefix), KEY.pBuf(prefix)

local dueScored = call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'WITHSCORES', 'LIMIT', 0, tonumber(ARGV[4]))
local due, dueAt = {}, {}
for k = 1, #dueScored, 2 do
  due[#due + 1] = dueScored[k]
  dueAt[#dueAt + 1] = tonumber(dueScored[k + 1])
end
if #due == 0 then
  local first = call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  return { first[2] or '', 0, 0, {}, {} }
end

-- When the schedulers' unbroken run began (see above); this call continues it.
local since = pLive(prefix, now, grace)
-- Whether the i-th due occurrence was already past its grace when the releases resumed: no
-- replica ran at it, and the catch-up policy applies.
local function misfired(i) return dueAt[i] + grace < since end

-- A member (`<code><task id>@<occurrence>|<h|l><group>`) read into { member, policy code (lower
-- case), job id, task id, occurrence, task gone (upper-case code), high priority, group }.
local LOWER = {}
for _, code in pairs(OVERLAP_CODE) do LOWER[string.upper(code)] = code end
local function entryOf(member)
  -- (a backfill's rerun of an occurrence has the job id `<task id>@<occurrence>#<n>`)
  local code, jobId, task, occ, prio, group = string.match(member, '^(.)(([^|]*)@(%d+)[^|]*)|(.)(.*)$')
  return { member, LOWER[code] or code, jobId, task, tonumber(occ), LOWER[code] ~= nil, prio == 'h', group }
end

-- Note the tasks whose last job and held run the policies need.
local entries = {}
local watched, watchedOrder = {}, {}
local newestLate = {}
for i, m in ipairs(due) do
  local e = entryOf(m)
  entries[i] = e
  local task = e[4]
  if e[2] ~= OVERLAP_CODE.allow and not watched[task] then
    watched[task] = true
    watchedOrder[#watchedOrder + 1] = task
  end
  if misfired(i) then newestLate[task] = i end
end

-- Whether the run of job `id` has not ended: the job has not, or it fanned out (ctx.fanOut) and
-- not all its children have ended.
local function runActive(id)
  local j = call('HMGET', KEY.job(prefix, id), 'state', CHILD_FIELDS.total, CHILD_FIELDS.ended)
  if not j[1] then return false end
  if j[1] == 'success' then return j[2] ~= false and j[3] == false end
  return not FINAL[j[1]]
end

-- Per watched task: its last job, whether its run has not ended, and the job buffer-one holds.
local last, active, held = {}, {}, {}
if #watchedOrder > 0 then
  local lasts = call('HMGET', lastKey, unpack(watchedOrder))
  local helds = call('HMGET', bufKey, unpack(watchedOrder))
  for k, task in ipairs(watchedOrder) do
    -- not recorded (the task's policy was `allow` until now): the newest submitted run in its history
    local id = lasts[k] or pLastFromHistory(prefix, task)
    if id then
      last[task] = id
      active[task] = runActive(id)
    end
    held[task] = helds[k] or nil
  end
end

local batch = newJobBatch()
local done = {}
local submitted, skipped = 0, 0
local lastOut, heldOut = {}, {}
local cancels = {}
local catchup = {}
-- job task -> outcome code -> occurrences
local outcomes = {}

-- Counts an occurrence of planned job `jobId` (read before it goes) under its task and `kind`.
local function count(jobId, kind)
  local task = jobTask(call('HGET', KEY.job(prefix, jobId), 'd') or '') or ''
  local t = outcomes[task]
  if not t then
    t = {}
    outcomes[task] = t
  end
  t[kind] = (t[kind] or 0) + 1
end

-- Submits entry e's job: `waiting`, submitted now, into its group.
local function submit(e)
  local jobKey = KEY.job(prefix, e[3])
  -- a planned job has no `submitted` yet: 1 new field; 2 means there was no such job
  if call('HSET', jobKey, 'state', 'waiting', 'submitted', submittedAt) == 2 then
    call('DEL', jobKey)
    return
  end
  enqueueLater(prefix, batch, e[3], e[8], e[7])
  submitted = submitted + 1
  count(e[3], 's')
  -- the overlap policies read the last job at release; an `allow` task's comes from its history
  if not e[6] and e[2] ~= OVERLAP_CODE.allow then lastOut[e[4]] = e[3] end
end

-- An occurrence not submitted: its planned job goes, the history says why.
local function drop(jobId, task, occ, why)
  call('DEL', KEY.job(prefix, jobId))
  local hk = KEY.pHistory(prefix, task)
  call('ZREM', hk, jobId)
  call('ZADD', hk, occ, why)
end

local function skip(jobId, task, occ)
  skipped = skipped + 1
  count(jobId, 'k')
  drop(jobId, task, occ, HISTORY_MARK.skipped .. occ)
end

local function hold(e)
  held[e[4]] = e[1]
  heldOut[e[4]] = e[1]
  call('ZADD', KEYS[1], now + poll, e[1])
  done[e[1]] = 'held'
end

-- Submits a buffer-one run that may go now; the task then has a run in progress and none held.
local function submitHeld(e)
  submit(e)
  held[e[4]], heldOut[e[4]] = nil, false
  active[e[4]] = true
end

local backlogs = {}
for i, e in ipairs(entries) do
  local member, code, jobId, task, occ = e[1], e[2], e[3], e[4], e[5]
  if not done[member] then
    done[member] = true
    local missed = false
    local queued = code == OVERLAP_CODE['buffer-all'] and call('ZSCORE', KEY.pBacklog(prefix, task), member)
    if misfired(i) and held[task] ~= member and not queued then
      -- no replica ran at the occurrence: the task's catch-up policy decides
      local c = catchup[task]
      if not c then
        c = call('HMGET', KEY.pTask(prefix, task), 'catchup', 'catchupWindow', 'nextrun')
        catchup[task] = c
      end
      if c[1] == 'none' then
        missed = true
      elseif c[1] == 'all' then
        missed = now - occ > (tonumber(c[2]) or 300000)
      else
        -- latest: only the newest late one, unless the task's next occurrence is past too (the
        -- claim of that one submits the latest)
        missed = newestLate[task] ~= i or (c[3] and c[3] ~= '' and tonumber(c[3]) <= now) or false
      end
    end
    if missed then
      count(jobId, 'm')
      drop(jobId, task, occ, HISTORY_MARK.missed .. occ .. '@1@' .. occ)
    elseif code == OVERLAP_CODE.allow then
      submit(e)
    elseif code == OVERLAP_CODE['buffer-all'] then
      if not queued then call('ZADD', KEY.pBacklog(prefix, task), occ, member) end
      if not backlogs[task] then
        backlogs[task] = true
        backlogs[#backlogs + 1] = task
      end
    elseif code == OVERLAP_CODE.skip then
      if active[task] then skip(jobId, task, occ) else submit(e) end
    elseif code == OVERLAP_CODE['cancel-previous'] then
      submit(e)
      if active[task] and last[task] then
        cancels[#cancels + 1] = last[task]
        active[task] = false
      end
    else -- buffer-one
      local h = held[task]
      if h and h ~= member and not active[task] then
        -- the held run goes first, now that the last one has ended
        done[h] = true
        call('ZREM', KEYS[1], h)
        submitHeld(entryOf(h))
        h = nil
      end
      if h == member then
        if active[task] then hold(e) else submitHeld(e) end
      elseif not active[task] then
        submit(e)
        active[task] = true
      elseif not h then
        hold(e)
      else
        skip(jobId, task, occ)
      end
    end
  end
end

-- Take the released occurrences out of p:staged (a held one stays, re-scored).
local gone = {}
for _, e in ipairs(entries) do
  if done[e[1]] == true then gone[#gone + 1] = e[1] end
end
for k = 1, #gone, 500 do call('ZREM', KEYS[1], unpack(gone, k, math.min(#gone, k + 499))) end
-- buffer-all: each backlog touched submits its earliest run when it may, and keeps its turn.
for _, task in ipairs(backlogs) do
  local bk = KEY.pBacklog(prefix, task)
  local enabled = call('HGET', KEY.pTask(prefix, task), 'enabled')
  if not enabled then
    -- the task is gone: its backlog's planned jobs go, a bounded number per call
    local dropped = call('ZPOPMIN', bk, 500)
    for k = 1, #dropped, 2 do call('DEL', KEY.job(prefix, entryOf(dropped[k])[3])) end
  elseif enabled == '1' and not active[task] then
    -- its earliest run still planned (one that is not was submitted otherwise, or dropped: passed
    -- over, a bounded number per call)
    for _ = 1, 100 do
      local first = call('ZPOPMIN', bk)
      if not first[1] then break end
      local e = entryOf(first[1])
      if call('HGET', KEY.job(prefix, e[3]), 'state') == 'planned' then
        submit(e)
        active[task] = true
        break
      end
    end
  end
  local turn = call('ZRANGE', bk, 0, 0)
  if turn[1] then call('ZADD', KEYS[1], now + poll, turn[1]) end
end
flushJobs(prefix, batch)
-- An event rule's pending-run task goes with its last run; its history stays for a while.
local age = tonumber(ARGV[7])
for _, e in ipairs(entries) do
  if e[6] and done[e[1]] == true and call('HGET', KEY.pTask(prefix, e[4]), 'nextrun') == '' then
    pRemove(prefix, e[4], true, true)
    if age >= 0 then call('PEXPIRE', KEY.pHistory(prefix, e[4]), age) end
  end
end
local lastPairs = {}
for task, jobId in pairs(lastOut) do
  lastPairs[#lastPairs + 1] = task
  lastPairs[#lastPairs + 1] = jobId
end
if #lastPairs > 0 then call('HSET', lastKey, unpack(lastPairs)) end
for task, member in pairs(heldOut) do
  if member then call('HSET', bufKey, task, member) else call('HDEL', bufKey, task) end
end
if submitted > 0 then wake(prefix) end
flushChanges(prefix, ARGV[2])
local first = call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
local counted = {}
for task, t in pairs(outcomes) do
  for kind, n in pairs(t) do
    counted[#counted + 1], counted[#counted + 2], counted[#counted + 3] = task, kind, n
  end
end
return { first[2] or '', submitted, skipped, cancels, counted }
