--[[
  Records the progress of runs (ctx.progress, throttled by the executor): each job's `progress`
  field, for jobs that still run, and one events stream entry listing the updates.

  KEYS[1] events   (every key is built from ARGV[1])
  ARGV[1] key prefix
  ARGV[2] events stream max length (0: no events)
  ARGV[3..] pairs: job id, progress (a number)

  Returns the number of jobs updated.
]]
--- @include "includes/wire"
--- @include "includes/common"

local prefix = ARGV[1]
local updates = {}
for i = 3, #ARGV, 2 do
  local jobKey = KEY.job(prefix, ARGV[i])
  -- (a run that ended meanwhile keeps its last progress; a removed job is not written again)
  local state = call('HGET', jobKey, 'state')
  if state == 'running' or state == 'scheduled' then
    call('HSET', jobKey, 'progress', ARGV[i + 1])
    updates[#updates + 1] = { ARGV[i], tonumber(ARGV[i + 1]) }
  end
end
local maxEvents = num(ARGV[2])
if #updates > 0 and maxEvents > 0 then
  call('XADD', KEY.events(prefix), 'MAXLEN', '~', ARGV[2], '*', EVENT_FIELD.progress, cjson.encode(updates))
end
return #updates
