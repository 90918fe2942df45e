--[[
  Stages claimed periodic tasks' coming occurrences ahead of time, so that at the occurrence the
  fire script does little more than flip a flag: per task whose claim still holds (its p:nextrun
  score equals the claim token), each planned occurrence's job `<task id>@<occurrence ms>` is
  written in state `planned` (in no list and no count; readers treat it as absent) with an expiry,
  and the occurrence is entered in the task's run history under the job id. If no fire ever
  releases it (the replica died, the task changed), the planned job expires by itself; the fire
  script writes any job it does not find staged in full, so staging changes what runs at the
  occurrence, never what is submitted.

  KEYS[1] p:nextrun  (every key is built from ARGV[1])
  ARGV[1] key prefix
  ARGV[2] planned jobs expire this long (ms) after their occurrence
  ARGV[3..] one record per task: a MessagePack array of STAGE_WIDTH (11) raw strings: id, claim
            token, occurrences (comma-separated, ascending), then the job fields task, group,
            args, subject, submitter, priority, maxRetries, maxRuntime (as periodic-claim read them)

  Returns the number of tasks whose claim still held.
]]
--- @include "includes/common"
--- @include "includes/addJob"
--- @include "includes/periodic"

local prefix = ARGV[1]
local keepFor = tonumber(ARGV[2])
local STAGE_WIDTH = 11
local recs = {}
for i = 3, #ARGV do
  local f = cmsgpack.unpack(ARGV[i])
  if type(f) ~= 'table' or #f ~= STAGE_WIDTH then
    return redis.error_reply('ERR periodic-stage: a record must be an array of ' .. STAGE_WIDTH .. ' strings')
  end
  recs[#recs + 1] = f
end

local scores = pTokens(KEYS[1], recs)
local staged = 0
for r = 1, #recs do
  local f = recs[r]
  local id, token = f[1], f[2]
  if scores[r] and tonumber(scores[r]) == tonumber(token) and f[3] ~= '' then
    staged = staged + 1
    local history = {}
    for occ in string.gmatch(f[3], '[^,]+') do
      local jobId = id .. '@' .. occ
      stageJob(prefix, { jobId, f[4], f[5], f[6], f[7], f[8], f[9], f[10], f[11], id, occ }, tonumber(occ) + keepFor)
      history[#history + 1] = occ
      history[#history + 1] = jobId
    end
    redis.call('ZADD', prefix .. 'p:h:' .. id, unpack(history))
  end
end
return staged
