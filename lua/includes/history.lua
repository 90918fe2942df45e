--[[
  The queue's history (see src/redis/history.ts): the counts of a finish call's runs, which the
  executor adds up per task and run-time bucket before it sends them, added to the hash of the
  call's minute (`hist:m:<minute>`, kept 25 hours) and of its day (`hist:d:<day>`, kept 91 days):
  one HINCRBY per field and hash a call. A group's count (field `g:<group>`) goes to the minute's
  group hash alone (`hist:g:<minute>`, kept 2 hours: the dashboard's fairness view). Their expiry
  is set by the first call of each minute (as the library knows it: again after a restart or a
  failover), not by every call (docs/decisions/0034-history-counts.md).
]]
--- @include "includes/common"
--- @export addHistory

local MINUTE_TTL, DAY_TTL, GROUP_TTL = '90000', '7862400', '7200'
-- (the first byte of a group's field, `g:<group>`, is `g` (103); a task's begins with a digit or `f`)
local GROUP_BYTE = 103
-- Per queue prefix: the minute whose keys were given their expiry, and those keys.
local expiredMinute, minuteKeys, dayKeys, groupKeys, queues = {}, {}, {}, {}, 0

-- Adds `counts` (one MessagePack array of strings: field, count, ...; '' for none) to the history
-- hashes of time `now` (ms) of the queue under `prefix`.
local function addHistory(prefix, now, counts)
  if counts == '' then return end
  local minute = math.floor(now / 60000)
  local minuteKey, dayKey, groupKey = minuteKeys[prefix], dayKeys[prefix], groupKeys[prefix]
  local fresh = expiredMinute[prefix] ~= minute
  if fresh then
    if queues >= 1000 then expiredMinute, minuteKeys, dayKeys, groupKeys, queues = {}, {}, {}, {}, 0 end
    if not expiredMinute[prefix] then queues = queues + 1 end
    local m = string.format('%d', minute)
    minuteKey = prefix .. 'hist:m:' .. m
    dayKey = prefix .. 'hist:d:' .. string.format('%d', math.floor(minute / 1440))
    groupKey = prefix .. 'hist:g:' .. m
    expiredMinute[prefix], minuteKeys[prefix], dayKeys[prefix], groupKeys[prefix] = minute, minuteKey, dayKey, groupKey
  end
  local f = cmsgpack.unpack(counts)
  for i = 1, #f, 2 do
    if string.byte(f[i], 1) == GROUP_BYTE then
      call('HINCRBY', groupKey, string.sub(f[i], 3), f[i + 1])
    else
      call('HINCRBY', minuteKey, f[i], f[i + 1])
      call('HINCRBY', dayKey, f[i], f[i + 1])
    end
  end
  if fresh then
    call('EXPIRE', minuteKey, MINUTE_TTL)
    call('EXPIRE', dayKey, DAY_TTL)
    -- (every run counted has a group: a call with counts writes the group hash too)
    call('EXPIRE', groupKey, GROUP_TTL)
  end
end
