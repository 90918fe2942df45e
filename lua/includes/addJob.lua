--[[
  Adds one job in state `waiting` unless a job with its id exists.
  f: id, task, group, args, subject, submitter, priority ('high'|'low'), maxRetries,
     maxRuntime, tracker, occurrence (the last four may be '').
  Returns 1 when added, 0 when the id existed.
  addJobLater is the batch form: the list pushes and group counter changes are collected in a
  batch (newJobBatch) and applied by flushJobs with one LPUSH per list and one update per group.

  A periodic occurrence's job may be staged ahead of its occurrence (stageJob): its hash is
  written in state `planned`, in no list and no count, with an expiry, so that at the occurrence
  releaseJobLater only flips it to `waiting`. A planned job is not submitted: every reader treats
  it as absent.
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

local function addJob(prefix, now, f)
  if writeJob(prefix, now, f) == 0 then return 0 end
  local id, group = f[1], f[3]
  local high = f[7] == 'high'
  local gk = prefix .. 'g:' .. group
  redis.call('LPUSH', gk .. (high and ':h' or ':l'), id)
  updateGroup(prefix, group, high and { nh = 1 } or { nl = 1 })
  changed(id, 'waiting')
  return 1
end

local function newJobBatch()
  return { lists = {}, listOrder = {}, groups = {}, groupOrder = {} }
end

-- Queues job `id` for its group's list in a batch.
local function enqueueLater(prefix, batch, id, group, high)
  local list = prefix .. 'g:' .. group .. (high and ':h' or ':l')
  local ids = batch.lists[list]
  if not ids then
    ids = {}
    batch.lists[list] = ids
    batch.listOrder[#batch.listOrder + 1] = list
  end
  ids[#ids + 1] = id
  local d = batch.groups[group]
  if not d then
    d = { nh = 0, nl = 0 }
    batch.groups[group] = d
    batch.groupOrder[#batch.groupOrder + 1] = group
  end
  if high then d.nh = d.nh + 1 else d.nl = d.nl + 1 end
  changed(id, 'waiting')
end

local function addJobLater(prefix, now, f, batch)
  if writeJob(prefix, now, f) == 0 then return 0 end
  enqueueLater(prefix, batch, f[1], f[3], f[7] == 'high')
  return 1
end

-- Writes job f (see writeJob) in state `planned`, expiring at `expireAt` (ms) unless released.
-- A planned job already there gets the new expiry; a submitted one is left alone.
local function stageJob(prefix, f, expireAt)
  local jobKey = prefix .. 'j:' .. f[1]
  if writeJob(prefix, '', f, 'planned') == 0 then
    if redis.call('HGET', jobKey, 'state') ~= 'planned' then return end
  end
  redis.call('PEXPIREAT', jobKey, expireAt)
end

-- Submits a planned job in a batch: state `waiting`, submitted now, no expiry. Returns 1 when
-- released, 0 when the job was already submitted, and false when there is no such job (never
-- staged, or its stage expired or was dropped), which the caller then writes in full.
local function releaseJobLater(prefix, now, id, batch)
  local jobKey = prefix .. 'j:' .. id
  local job = redis.call('HMGET', jobKey, 'state', 'group', 'priority')
  if not job[1] then return false end
  if job[1] ~= 'planned' then return 0 end
  redis.call('HSET', jobKey, 'state', 'waiting', 'submitted', now)
  redis.call('PERSIST', jobKey)
  enqueueLater(prefix, batch, id, job[2], job[3] == 'high')
  return 1
end

-- Drops a planned job (its occurrence was skipped or its claim lost). Returns true when it was planned.
local function dropPlannedJob(prefix, id)
  local jobKey = prefix .. 'j:' .. id
  if redis.call('HGET', jobKey, 'state') ~= 'planned' then return false end
  redis.call('DEL', jobKey)
  return true
end

-- Applies a batch's pushes (in the order the jobs were added) and group changes.
local function flushJobs(prefix, batch)
  for _, list in ipairs(batch.listOrder) do
    local ids = batch.lists[list]
    for i = 1, #ids, 1000 do redis.call('LPUSH', list, unpack(ids, i, math.min(#ids, i + 999))) end
  end
  for _, group in ipairs(batch.groupOrder) do updateGroup(prefix, group, batch.groups[group]) end
end
