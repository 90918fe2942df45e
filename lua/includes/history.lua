--[[
  The queue's history (see src/redis/history.ts): the counts of a finish call's runs, which the
  executor adds up per task and run-time bucket before it sends them, added to the hash of the
  call's minute (`hist:m:<minute>`, kept 25 hours) and of its day (`hist:d:<day>`, kept 91 days):
  one HINCRBY per field and hash, and one EXPIRE per hash, a call.
]]
--- @include "includes/common"
--- @export addHistory

local MINUTE_TTL, DAY_TTL = '90000', '7862400'
-- The keys of the last minute and queue written to (reused while they last).
local lastMinute, lastPrefix, minuteKey, dayKey

-- Adds `counts` (one MessagePack array of strings: field, count, ...; '' for none) to the history
-- hashes of time `now` (ms) of the queue under `prefix`.
local function addHistory(prefix, now, counts)
  if counts == '' then return end
  local minute = math.floor(now / 60000)
  if minute ~= lastMinute or prefix ~= lastPrefix then
    lastMinute, lastPrefix = minute, prefix
    minuteKey = prefix .. 'hist:m:' .. string.format('%d', minute)
    dayKey = prefix .. 'hist:d:' .. string.format('%d', math.floor(minute / 1440))
  end
  local f = cmsgpack.unpack(counts)
  for i = 1, #f, 2 do
    call('HINCRBY', minuteKey, f[i], f[i + 1])
    call('HINCRBY', dayKey, f[i], f[i + 1])
  end
  call('EXPIRE', minuteKey, MINUTE_TTL)
  call('EXPIRE', dayKey, DAY_TTL)
end
