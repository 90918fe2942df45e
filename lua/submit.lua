--[[
  Submits a batch of jobs: each is added in state `waiting` unless its id exists (idempotent
  submit), its group joins the round-robin rotation, and idle executors are woken.

  KEYS[1] marker   (prefix .. 'marker'; every other key is built from ARGV[1])
  ARGV[1] key prefix '{rota:<queue>}:'
  ARGV[2] events stream max length (0: no events)
  ARGV[3] number of fields per job: SUBMIT_WIDTH (4), or all of SUBMIT_FIELDS (6) when some job is
          a periodic task's run
  ARGV[4] the jobs, as one MessagePack array of strings, flat, in the order of SUBMIT_FIELDS: per
          job id, description, group, priority, and with 6 fields tracker and occurrence (see
          includes/addJob). One argument instead of one per field spares the client and the
          server an argument each.

  Returns { submitted time (ms), added flag per job (1 added, 0 existed) }; or, writing nothing,
  { submitted time, {}, position (from 1) of the first job whose id is a planned periodic
  occurrence (staged ahead, not submitted yet): that id is reserved for it }.
]]
--- @include "includes/common"
--- @include "includes/changes"
--- @include "includes/groupChanges"
--- @include "includes/addJob"

local prefix = ARGV[1]
local width = num(ARGV[3])
local f = cmsgpack.unpack(ARGV[4])
local now = nowMs()
local submitted = str(now)
local batch = newJobBatch()
local flags = {}
local added = 0
-- One EXISTS for the whole batch: when none of its ids exists (the usual case), a job needs no
-- check of its own, only one against an id repeated inside the batch.
local jobKeys = {}
for i = 0, #f - 1, width do jobKeys[#jobKeys + 1] = prefix .. 'j:' .. f[i + AT_ID] end
local fresh = true
for i = 1, #jobKeys, 1000 do
  if call('EXISTS', unpack(jobKeys, i, math.min(#jobKeys, i + 999))) > 0 then fresh = false break end
end
if not fresh then
  for k, key in ipairs(jobKeys) do
    if call('HGET', key, 'state') == 'planned' then return { now, {}, k } end
  end
end
local seen = {}
for k, key in ipairs(jobKeys) do
  local i = (k - 1) * width
  local id = f[i + AT_ID]
  local a
  if not fresh then
    a = writeJob(key, submitted, f, i, width)
  elseif seen[id] then
    a = 0
  else
    seen[id] = true
    a = writeJob(key, submitted, f, i, width, nil, true)
  end
  if a == 1 then enqueueLater(prefix, batch, id, f[i + AT_GROUP], f[i + AT_PRIORITY] == 'high') end
  flags[k] = a
  added = added + a
end
flushJobs(prefix, batch)
if added > 0 then wake(prefix) end
flushChanges(prefix, ARGV[2])
return { now, flags }
