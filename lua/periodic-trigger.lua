--[[
  Asks the schedulers to run a task now, once: records the trigger time and makes the task due
  at once. A scheduler replica submits it as an occurrence at that time (job id
  `<task id>@<trigger time>`), through the overlap policy, without moving the task's nextrun.
  Works for disabled tasks too.

  KEYS[1] p:nextrun  (every key is built from ARGV[1])
  ARGV[1] key prefix
  ARGV[2] task id
  ARGV[3] now (ms) from an injected clock, or '' for the server clock

  Returns the trigger time (ms), or false when there is no such task.
]]
--- @include "includes/common"
--- @include "includes/periodic"

local prefix = ARGV[1]
local id = ARGV[2]
local tk = KEY.pTask(prefix, id)
if call('EXISTS', tk) == 0 then return false end
local now = nowMs()
if ARGV[3] ~= '' then now = tonumber(ARGV[3]) end
local old = call('HGET', tk, 'triggered')
if old and old ~= '' then return tonumber(old) end
call('HSET', tk, 'triggered', now)
call('ZADD', KEYS[1], now, id)
pWake(prefix)
return now
