--[[
  Adding jobs: writeJob writes a job's hash unless a job with its id exists, from
  f: id, description, group, priority ('high'|'low') (SUBMIT_FIELDS). The description (field `d`)
     is what the job is, packed once: a MessagePack array of task, group, priority, maxRetries,
     subject, submitter, maxRuntime, tracker, occurrence, parent (nil when absent), then the args
     when there are any (see src/queue/job.ts). The hash keeps its own copies of the fields the
     hot paths read (group; tracker and occurrence of a periodic run, whose start reads them), so
     that they unpack nothing; the paths that need the priority or retry limit (cancel, retry, a
     failed run) read them from the description (describeJob);
  enqueueLater puts it in its group's list in a batch (newJobBatch), or in `delayed` when it has a
  due time still to come: list pushes are collected and applied by flushJobs with one LPUSH per
  list, and the group counters with one update per batch.

  A submit of a list of jobs (submit.lua, batch.lua's add) checks its ids at once
  (submittedKeys), reads each due time (dueTime), and ends with flushSubmitted, which wakes an
  idle executor for what it added.

  A periodic occurrence's job is staged ahead of its occurrence (stageJob): its hash is written
  in state `planned`, in no list and no count, so that at the occurrence the release only flips
  it to `waiting`. A planned job is not submitted: every reader treats it as absent. Only a
  staged job has a tracker and occurrence: a submit never carries them.
]]
--- @include "includes/common"
--- @include "includes/changes"
--- @include "includes/groupChanges"
--- @export AT_ID, AT_GROUP, AT_PRIORITY, writeJob, packDescription, newJobBatch, enqueueLater
--- @export stageJob, flushJobs, submittedKeys, dueTime, delayedUntil, flushSubmitted

-- The HSET arguments of the job being written (reused: the library keeps it across calls).
local jobFields = { 'd', false, 'group', false, 'state', false }

-- Where each field of a job lies in a submitted list (SUBMIT_FIELDS), past the job's offset.
local AT_ID, AT_DESCRIPTION, AT_GROUP, AT_PRIORITY, AT_RUN_AT
do
  local at = {}
  for k = 1, #SUBMIT_FIELDS do at[SUBMIT_FIELDS[k]] = k end
  AT_ID, AT_DESCRIPTION, AT_GROUP, AT_PRIORITY, AT_RUN_AT = at.id, at.description, at.group, at.priority, at.runAt
end

-- Writes job hash `jobKey` from the fields at f[i + 1 .. i + SUBMIT_WIDTH] (SUBMIT_FIELDS) in
-- `state` (default waiting), with `submitted` unless planned, `runAt` when given (ms, a job
-- submitted with a due time), and `periodic` ({ tracker, occurrence, due? }, a staged periodic run)
-- when given, unless the job exists (`unchecked`: the caller knows it does not). Returns 1 when
-- written, 0 when it existed.
local function writeJob(jobKey, now, f, i, state, unchecked, runAt, periodic)
  if not unchecked and call('EXISTS', jobKey) == 1 then return 0 end
  state = state or 'waiting'
  local a = jobFields
  a[2], a[4], a[6] = f[i + AT_DESCRIPTION], f[i + AT_GROUP], state
  local n = 6
  if state ~= 'planned' then a[7], a[8], n = 'submitted', now, 8 end
  if periodic then
    a[n + 1], a[n + 2], a[n + 3], a[n + 4] = 'tracker', periodic.tracker, 'occurrence', periodic.occurrence
    n = n + 4
    -- a jittered occurrence: when it is due (not `due`, a stuck job's retry time)
    if periodic.due then a[n + 1], a[n + 2], n = 'jitterDue', periodic.due, n + 2 end
  end
  if runAt then a[n + 1], a[n + 2], n = 'runAt', str(runAt), n + 2 end
  call('HSET', jobKey, unpack(a, 1, n))
  return 1
end

-- The description (see above) of a periodic task's job: `d` holds the fields by name (DESCRIPTION,
-- nil when absent), `args` the args already packed ('' when none).
local descriptionValues = {}
local function packDescription(d, args)
  local n = #DESCRIPTION
  for i = 1, n do descriptionValues[i] = d[DESCRIPTION[i]] end
  return string.char(0x90 + n + (args ~= '' and 1 or 0)) .. cmsgpack.pack(unpack(descriptionValues, 1, n)) .. args
end

local function newJobBatch()
  return { lists = {}, listOrder = {}, keysHigh = {}, keysLow = {} }
end

-- Notes in `batch` a job delayed until `at` (ms): flushSubmitted wakes an executor when no job in
-- `delayed` is due before it.
local function delayedUntil(batch, at)
  local earliest = batch.earliest
  if not earliest or at < earliest then batch.earliest = at end
end

-- Queues job `id` for its group's list in a batch (and lists it as entered `waiting`); or, given
-- `delayedTo` (ms, still to come), adds it to `delayed` due then (and lists it as entered
-- `delayed`), where the take promotes it (see promoteDue in includes/take).
local function enqueueLater(prefix, batch, id, group, high, delayedTo)
  if delayedTo then
    call('ZADD', KEY.delayed(prefix), str(delayedTo), id)
    changed(id, 'delayed')
    delayedUntil(batch, delayedTo)
    return
  end
  local keys = high and batch.keysHigh or batch.keysLow
  local key = keys[group]
  if not key then
    key = KEY.groupList(prefix, group, high and 'h' or 'l')
    keys[group] = key
  end
  -- a list's ids in order: a list given one id (the usual case in a bulk over many groups) keeps
  -- it as it is, without a table of its own
  local lists = batch.lists
  local ids = lists[key]
  if ids == nil then
    lists[key] = id
    batch.listOrder[#batch.listOrder + 1] = key
  elseif type(ids) == 'string' then
    lists[key] = { ids, id }
  else
    ids[#ids + 1] = id
  end
  deferGroup(group, high and 'nh' or 'nl', 1)
  local waiting = batch.waiting
  if not waiting then
    waiting = changedList('waiting')
    batch.waiting = waiting
  end
  waiting[#waiting + 1] = id
end

-- Writes `job` (its SUBMIT_FIELDS by name, and its tracker and occurrence) in state `planned`,
-- unless it exists. Returns true when the job is planned afterwards (written now, or already
-- planned), false when it was submitted already.
local staging = {}
local function stageJob(prefix, job)
  for k = 1, SUBMIT_WIDTH do staging[k] = job[SUBMIT_FIELDS[k]] end
  local jobKey = KEY.job(prefix, job.id)
  if writeJob(jobKey, '', staging, 0, 'planned', false, nil, job) == 1 then return true end
  return call('HGET', jobKey, 'state') == 'planned'
end

-- Applies a batch's pushes (in the order the jobs were added) and group changes. Returns true
-- when any of those groups is in the rotation afterwards.
local function flushJobs(prefix, batch)
  for _, list in ipairs(batch.listOrder) do
    local ids = batch.lists[list]
    if type(ids) == 'string' then
      call('LPUSH', list, ids)
    else
      sendChunks('LPUSH', list, ids, #ids, 1000)
    end
  end
  return flushGroups(prefix)
end

-- The keys of the jobs of a submitted list f (`width` fields per job), and whether none of them
-- exists: one EXISTS per 1,000 ids, so that in the usual case a job needs no check of its own,
-- only one against an id repeated in the list. Or nil and the position (from 1) of the first job
-- whose id is a planned periodic occurrence (staged ahead, not submitted yet: the id is
-- reserved for it).
local function submittedKeys(prefix, f, width)
  local jobKeys = {}
  for i = 0, #f - 1, width do jobKeys[#jobKeys + 1] = KEY.job(prefix, f[i + AT_ID]) end
  local fresh = true
  for i = 1, #jobKeys, 1000 do
    if call('EXISTS', unpack(jobKeys, i, math.min(#jobKeys, i + 999))) > 0 then fresh = false break end
  end
  if not fresh then
    for k, jobKey in ipairs(jobKeys) do
      if call('HGET', jobKey, 'state') == 'planned' then return nil, k end
    end
  end
  return jobKeys, fresh
end

-- The due time (ms) of the job at offset i of a submitted list f with due times (its field
-- runAt: '' none, ms, or DELAY_MARK and a delay in ms from `now`), and 'delayed' when it is
-- still to come (the state the job is written in), else nil.
local function dueTime(f, i, now)
  local at = f[i + AT_RUN_AT]
  if at == '' then return nil end
  if stringSub(at, 1, 1) == DELAY_MARK then at = now + tonumber(stringSub(at, 2)) else at = tonumber(at) end
  return at, at > now and 'delayed' or nil
end

-- Applies a submit's batch (flushJobs) and wakes an idle executor when it enqueued a job, or
-- delayed one to before anything else in `delayed` (an executor sleeps until the head of
-- `delayed`: one is woken to learn of an earlier one).
local function flushSubmitted(prefix, batch)
  flushJobs(prefix, batch)
  if batch.waiting then wake(prefix) end
  local earliest = batch.earliest
  if earliest and not woken then
    local head = call('ZRANGE', KEY.delayed(prefix), '0', '0', 'WITHSCORES')
    if tonumber(head[2]) == earliest then wake(prefix) end
  end
end
