--[[
  One step of a clean: removes finished jobs of one final state (their hash, log list, attempts,
  the ends delivered from their children in other queues, and a dedup key they hold) that
  finished at or before a time, optionally only those of one group, visiting at most a batch of
  the state's set (see includes/finishedScan). The caller repeats it with the cursor it answers
  until it answers none, so that no call holds Redis for long.

  KEYS[1] done:<state>   (every key is built from ARGV[1])
  ARGV[1] key prefix
  ARGV[2] events stream max length
  ARGV[3] state: success | failed | cancelled
  ARGV[4] age (ms): jobs finished at least this long ago (the first step sets `until` from it)
  ARGV[5] cursor until ('' in the first step), ARGV[6] cursor score, ARGV[7] cursor skip
  ARGV[8] most members visited
  ARGV[9] group, or '' for every group
  ARGV[10] most jobs removed in this step (it ends the walk when reached)

  Returns { jobs removed, until, next score, next skip } (the last two absent when the walk is over).
]]
--- @include "includes/common"
--- @include "includes/changes"
--- @include "includes/finishedScan"
--- @include "includes/dedup"
--- @include "includes/jobKeys"

local prefix = ARGV[1]
local state = ARGV[3]
local untilMs = ARGV[5]
if untilMs == '' then untilMs = str(nowMs() - tonumber(ARGV[4])) end
local group = ARGV[9]
local most = tonumber(ARGV[10])
local key = KEYS[1]
local crossed = crossDeliveredHere(prefix)
local removed = 0
local gone = {}
local score, skip = walkFinished(key, untilMs, ARGV[6], tonumber(ARGV[7]), tonumber(ARGV[8]), function(id)
  if #gone == most then return 'stop' end
  local jobKey = KEY.job(prefix, id)
  if group ~= '' then
    local g = call('HGET', jobKey, 'group')
    -- (a member whose job is gone is removed whatever its group was)
    if g and g ~= group then return false end
  end
  gone[#gone + 1] = id
  -- (a member without its job is dropped uncounted; a throttle's dedup key goes with its job)
  releaseDedupOf(prefix, id, false)
  if call('DEL', unpack(addJobKeys({}, prefix, { id }, crossed))) > 0 then removed = removed + 1 end
  return true
end)
sendChunks('ZREM', key, gone, #gone, 1000)
countDelta[state] = (countDelta[state] or 0) - removed
flushChanges(prefix, ARGV[2])
if score == nil then return { removed, untilMs } end
return { removed, untilMs, score, skip }
