--[[
  Reading a job's hash (j:<id>): whether it is submitted, and what its description says.
]]
--- @include "includes/wire"
--- @include "includes/common"
--- @export submittedJob, describeJob, jobTask

-- HMGET of a job's state and `...`, or nil when there is no submitted job under `jobKey` (a
-- planned job, a periodic occurrence staged ahead, is not submitted yet).
local function submittedJob(jobKey, ...)
  local job = call('HMGET', jobKey, 'state', ...)
  if not job[1] or job[1] == 'planned' then return nil end
  return job
end

-- Where the priority and the retry limit are in a description (DESCRIPTION), and how many of its
-- fields describeJob decodes to reach both.
local PRIORITY_AT, MAX_RETRIES_AT
for i = 1, #DESCRIPTION do
  if DESCRIPTION[i] == 'priority' then PRIORITY_AT = i elseif DESCRIPTION[i] == 'maxRetries' then MAX_RETRIES_AT = i end
end
local DESCRIBED = PRIORITY_AT > MAX_RETRIES_AT and PRIORITY_AT or MAX_RETRIES_AT

-- (the fields of `...`, what cmsgpack.unpack_limit answers: the offset it stopped at, then the
-- fields it decoded)
local function priorityAndRetries(...)
  return (select(PRIORITY_AT + 1, ...)), (select(MAX_RETRIES_AT + 1, ...))
end

-- The priority ('high'|'low') and retry limit of a job, from its description `d` (see
-- includes/addJob), a MessagePack array: only its first fields are decoded (one byte in, past the
-- array's header), never the args, which may hold types the Lua decoder does not know.
-- A description that does not decode (a raw writer's, a corrupted one) gives nil for both, so
-- that the job can still be failed (the executor fails it: it cannot be run) instead of every
-- call that meets it failing.
local function describedOr(ok, ...)
  if not ok then return nil, nil end
  return priorityAndRetries(...)
end
local function describeJob(d)
  return describedOr(pcall(cmsgpack.unpack_limit, d, DESCRIBED, 1))
end

-- Where the task name is in a description (DESCRIPTION).
local TASK_AT
for i = 1, #DESCRIPTION do
  if DESCRIPTION[i] == 'task' then TASK_AT = i end
end

-- The task name of a job, from its description `d`: only the fields up to it are decoded.
local function jobTask(d)
  local decoded = { pcall(cmsgpack.unpack_limit, d, TASK_AT, 1) }
  if not decoded[1] then return nil end
  return decoded[TASK_AT + 2]
end
