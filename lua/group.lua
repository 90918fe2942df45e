--[[
  Changes a group's settings (pause, concurrency limit, weight) and puts it in or takes it out
  of the round-robin rotation accordingly, waking executors when it becomes runnable. Setting a
  limit on a group that had none counts its runs in progress, and lifting it drops the count
  (see countsRunning in includes/groups).

  KEYS[1] rotation (every key is built from ARGV[1])
  ARGV[1] key prefix
  ARGV[2] group
  ARGV[3..] field/value pairs among: paused ('1'|'0'), limit (0: none), weight (>= 1)

  Returns 1 when the group is in the rotation afterwards, else 0.
]]
--- @include "includes/common"
--- @include "includes/groups"
--- @include "includes/groupRecord"
--- @include "includes/leases"

local prefix = ARGV[1]
local group = ARGV[2]
local g = loadGroups(prefix, { group }, {})[group]
local wasLimited = g.limit > 0
for i = 3, #ARGV - 1, 2 do
  local field, value = ARGV[i], ARGV[i + 1]
  if field == 'paused' then g.paused = value == '1' else g[field] = tonumber(value) end
end
if g.limit > 0 and not wasLimited then
  g.running = runningByGroup(prefix, group)[group] or 0
  call('SADD', prefix .. 'limited', group)
elseif g.limit == 0 and wasLimited then
  g.running = 0
  call('SREM', prefix .. 'limited', group)
end
if storeGroups(prefix, { group }, { [group] = g }) then
  wake(prefix)
  return 1
end
return 0
