--[[
  The queue's history (see src/redis/history.ts): the counts of a finish call's runs, which the
  executor adds up per task and run-time bucket before it sends them, added to the hash of the
  call's minute (`hist:m:<minute>`, kept 25 hours) and of its day (`hist:d:<day>`, kept 91 days):
  one HINCRBY per field and hash a call. The runs each group ended, which an executor adds up over
  a few seconds and sends apart from its finish calls (history-groups.lua), go to the minute's
  group hash (`hist:g:<minute>`, kept 2 hours: the dashboard's fairness view). Their expiry is set
  by the first call of each minute (as the library knows it: again after a restart or a failover),
  not by every call (docs/decisions/0034-history-counts.md).
]]
--- @include "includes/common"
--- @export addHistory
--- @export addGroupHistory

local MINUTE_TTL, DAY_TTL, GROUP_TTL = HISTORY_TTL.minute, HISTORY_TTL.day, HISTORY_TTL.groups
-- Per queue prefix: the minute whose keys were given their expiry, and those keys.
local expiredMinute, minuteKeys, dayKeys, queues = {}, {}, {}, 0

-- Adds `counts` (one MessagePack array of strings: field, count, ...; '' for none) to the history
-- hashes of time `now` (ms) of the queue under `prefix`.
local function addHistory(prefix, now, counts)
  if counts == '' then return end
  local minute = math.floor(now / 60000)
  local minuteKey, dayKey = minuteKeys[prefix], dayKeys[prefix]
  local fresh = expiredMinute[prefix] ~= minute
  if fresh then
    if queues >= 1000 then expiredMinute, minuteKeys, dayKeys, queues = {}, {}, {}, 0 end
    if not expiredMinute[prefix] then queues = queues + 1 end
    minuteKey = KEY.historyMinute(prefix, string.format('%d', minute))
    dayKey = KEY.historyDay(prefix, string.format('%d', math.floor(minute / 1440)))
    expiredMinute[prefix], minuteKeys[prefix], dayKeys[prefix] = minute, minuteKey, dayKey
  end
  local f = cmsgpack.unpack(counts)
  for i = 1, #f, 2 do
    call('HINCRBY', minuteKey, f[i], f[i + 1])
    call('HINCRBY', dayKey, f[i], f[i + 1])
  end
  if fresh then
    call('EXPIRE', minuteKey, MINUTE_TTL)
    call('EXPIRE', dayKey, DAY_TTL)
  end
end

-- Adds the runs per group `counts` (one MessagePack array of strings: group, count, ...) to the
-- group hash of time `now` (ms) of the queue under `prefix`; called a few times a minute, so the
-- expiry is set every call.
local function addGroupHistory(prefix, now, counts)
  local key = KEY.historyGroups(prefix, string.format('%d', math.floor(now / 60000)))
  local f = cmsgpack.unpack(counts)
  for i = 1, #f, 2 do call('HINCRBY', key, f[i], f[i + 1]) end
  call('EXPIRE', key, GROUP_TTL)
end
