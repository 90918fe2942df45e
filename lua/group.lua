--[[
  Changes a group's settings (pause, concurrency limit, weight) and puts it in or takes it out
  of the round-robin rotation accordingly, waking executors when it becomes runnable.

  KEYS[1] ready    (every key is built from ARGV[1])
  ARGV[1] key prefix
  ARGV[2] group
  ARGV[3..] field/value pairs among: paused ('1'|'0'), limit (0: none), weight (>= 1)

  Returns 1 when the group is in the rotation afterwards, else 0.
]]
--- @include "includes/common"

local prefix = ARGV[1]
local group = ARGV[2]
local gk = prefix .. 'g:' .. group
redis.call('SADD', prefix .. 'groups', group)
if #ARGV >= 4 then redis.call('HSET', gk, unpack(ARGV, 3)) end
if updateGroup(prefix, group, {}) then
  wake(prefix)
  return 1
end
return 0
