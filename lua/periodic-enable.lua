--[[
  Enables or disables a periodic task. Enabling a disabled task plans its next occurrence from
  now (ARGV[4]); occurrences while it was disabled are not caught up. Enabling an enabled task
  changes nothing. Disabling drops the occurrences staged and not yet released, and records the
  note given (ARGV[6], '' for none) as the task's `note`.

  KEYS[1] p:nextrun  (every key is built from ARGV[1])
  ARGV[1] key prefix
  ARGV[2] task id
  ARGV[3] '1' enable | '0' disable
  ARGV[4] next occurrence from now (ms) or '' (enable only)
  ARGV[5] now (ms)
  ARGV[6] note (disable only)

  Returns 1 when the task exists, 0 when not.
]]
--- @include "includes/periodic"

local prefix = ARGV[1]
local id = ARGV[2]
local tk = KEY.pTask(prefix, id)
local enabled = call('HGET', tk, 'enabled')
if not enabled then return 0 end
if ARGV[3] == '0' then
  pUnstage(prefix, id)
  call('HSET', tk, 'enabled', '0', 'updated', ARGV[5], 'note', ARGV[6] or '')
  call('ZREM', KEYS[1], id)
  return 1
end
if enabled == '1' then return 1 end
call('HSET', tk, 'enabled', '1', 'nextrun', ARGV[4], 'updated', ARGV[5], 'note', '')
if ARGV[4] ~= '' then
  call('ZADD', KEYS[1], tonumber(ARGV[4]), id)
  pWake(prefix)
end
return 1
