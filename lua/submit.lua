--[[
  Submits a batch of jobs: each is added in state `waiting` unless its id exists (idempotent
  submit), its group joins the round-robin rotation, and idle executors are woken.

  KEYS[1] marker   (prefix .. 'marker'; every other key is built from ARGV[1])
  ARGV[1] key prefix '{rota:<queue>}:'
  ARGV[2] events stream max length (0: no events)
  ARGV[3] number of fields per job (7)
  ARGV[4..] per job: id, description, group, priority, maxRetries, tracker, occurrence (see
            includes/addJob)

  Returns { submitted time (ms), added flag per job (1 added, 0 existed) }.
]]
--- @include "includes/common"
--- @include "includes/addJob"

local prefix = ARGV[1]
local width = tonumber(ARGV[3])
local now = nowMs()
local submitted = str(now)
local batch = newJobBatch()
local flags = {}
local added = 0
for i = 4, #ARGV, width do
  local f = {}
  for k = 0, width - 1 do f[k + 1] = ARGV[i + k] end
  local a = writeJob(prefix, submitted, f)
  if a == 1 then enqueueLater(prefix, batch, f[1], f[3], f[4] == 'high') end
  flags[#flags + 1] = a
  added = added + a
end
flushJobs(prefix, batch)
if added > 0 then wake(prefix) end
flushChanges(prefix, ARGV[2])
return { now, flags }
