--[[
  Changes a group's settings (pause, concurrency limit, weight, rate limit) and puts it in or
  takes it out of the round-robin rotation accordingly, waking executors when it becomes
  runnable. Setting a limit on a group that had none counts its runs in progress, and lifting it
  drops the count (see countsRunning in includes/groups). Setting a rate trims the group's rate
  log to the new window (a group at the new rate is parked until its window frees); lifting it
  (rate 0) removes the log (see includes/rateLog).

  KEYS[1] rotation (every key is built from ARGV[1])
  ARGV[1] key prefix
  ARGV[2] group
  ARGV[3..] field/value pairs among: paused ('1'|'0'), limit (0: none), weight (>= 1), rate (most
          starts per window, 0: none) with per (the window, ms)

  Returns 1 when the group is in the rotation afterwards, else 0.
]]
--- @include "includes/common"
--- @include "includes/groups"
--- @include "includes/groupRecord"
--- @include "includes/leases"
--- @include "includes/rateLog"

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
  call('SADD', KEY.limited(prefix), group)
elseif g.limit == 0 and wasLimited then
  g.running = 0
  call('SREM', KEY.limited(prefix), group)
end
if g.rate > 0 then
  local now = nowMs()
  trimRateLog(prefix, group, g.per, now)
  g.logged = call('ZCARD', rateLogKey(prefix, group))
  if g.logged >= g.rate then parkRated(prefix, group, g.rate, g.per, g.logged) end
elseif g.logged > 0 or g.per > 0 then
  g.logged, g.per = 0, 0
  dropRateLog(prefix, group)
end
if storeGroups(prefix, { group }, { [group] = g }) then
  wake(prefix)
  return 1
end
return 0
