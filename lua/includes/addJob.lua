--[[
  Adding jobs: writeJob writes a job's hash unless a job with its id exists, with
  f: id, task, group, args, subject, submitter, priority ('high'|'low'), maxRetries,
     maxRuntime, tracker, occurrence (the last five may be '');
  enqueueLater puts it in its group's list in a batch (newJobBatch): list pushes are collected and
  applied by flushJobs with one LPUSH per list, and the group counters with one update per batch.

  A periodic occurrence's job is staged ahead of its occurrence (stageJob): its hash is written
  in state `planned`, in no list and no count, so that at the occurrence the release only flips
  it to `waiting`. A planned job is not submitted: every reader treats it as absent.
]]
local OPTIONAL_JOB_FIELDS = { [5] = 'subject', [6] = 'submitter', [9] = 'maxRuntime', [10] = 'tracker', [11] = 'occurrence' }

-- Writes the job hash (given state, and `submitted` unless planned) unless the id exists.
-- Returns 1 when written, 0 when it existed.
local function writeJob(prefix, now, f, state)
  local jobKey = prefix .. 'j:' .. f[1]
  if redis.call('EXISTS', jobKey) == 1 then return 0 end
  local fields = { 'id', f[1], 'task', f[2], 'group', f[3], 'args', f[4], 'priority', f[7],
    'maxRetries', f[8], 'state', state or 'waiting' }
  if state ~= 'planned' then fields[#fields + 1] = 'submitted'; fields[#fields + 1] = now end
  for i, name in pairs(OPTIONAL_JOB_FIELDS) do
    if f[i] ~= '' then fields[#fields + 1] = name; fields[#fields + 1] = f[i] end
  end
  redis.call('HSET', jobKey, unpack(fields))
  return 1
end

local function newJobBatch()
  return { lists = {}, listOrder = {}, listKeys = {} }
end

-- Queues job `id` for its group's list in a batch.
local function enqueueLater(prefix, batch, id, group, high)
  local keys = batch.listKeys[group]
  if not keys then
    local gk = prefix .. 'g:' .. group
    keys = { [true] = gk .. ':h', [false] = gk .. ':l' }
    batch.listKeys[group] = keys
  end
  local ids = slot(batch.lists, batch.listOrder, keys[high])
  ids[#ids + 1] = id
  deferGroup(group, high and 'nh' or 'nl', 1)
  changed(id, 'waiting')
end

-- Writes job f (see writeJob) in state `planned`, unless it exists. Returns true when the job is
-- planned afterwards (written now, or already planned), false when it was submitted already.
local function stageJob(prefix, f)
  if writeJob(prefix, '', f, 'planned') == 1 then return true end
  return redis.call('HGET', prefix .. 'j:' .. f[1], 'state') == 'planned'
end

-- Applies a batch's pushes (in the order the jobs were added) and group changes. Returns true
-- when any of those groups is in the rotation afterwards.
local function flushJobs(prefix, batch)
  for _, list in ipairs(batch.listOrder) do
    local ids = batch.lists[list]
    for i = 1, #ids, 1000 do redis.call('LPUSH', list, unpack(ids, i, math.min(#ids, i + 999))) end
  end
  return flushGroups(prefix)
end
