--[[
  The run of a job whose task its executor has no handler for (outcome OUTCOME_UNHANDLED): the
  job is passed on, back to `delayed` for a short while (PASS_DELAY_MS, doubling with each pass
  of the job up to PASS_DELAY_MAX_MS, so that the executor that passed it does not take it again
  at once, and a job only executors busy elsewhere have costs fewer and fewer passes), counting
  no retry, while some live executor of the queue lists the task in its registry entry (as its
  heartbeat wrote it, see heartbeat.lua; an entry that lists only part of its tasks may have it).
  Once no live executor has had the task for the grace the executor sent (ms: its
  unknownTaskGraceMs, counted from the first pass that found none, field `unhandled`), the job
  fails for good. A job passed on wakes every idle executor (one marker member each, up to
  MOST_WOKEN): each take answers the next due time, so that the executors that have the task
  are awake when it is due, not only the one that passed it. Every shard keeps a registry of all the queue's executors (each beats on every
  shard), so the shard's own registry answers.
]]
--- @include "includes/wire"
--- @include "includes/common"
--- @include "includes/jobs"
--- @export unhandledRun

local PASS_DELAY_MS, PASS_DELAY_MAX_MS = 100, 1000
local MOST_WOKEN = 100

-- Whether a live executor has task `task`, by task, for the call (reset as each call begins),
-- the live executors' count, and whether this call woke them all.
local handledTasks = {}
local liveCount, wokeAll = 0, false
onBeginCall(function()
  if next(handledTasks) then handledTasks = {} end
  wokeAll = false
end)

-- Wakes every idle executor of the queue, once a call (see above).
local function wakeEvery(prefix)
  if wokeAll then return end
  wokeAll = true
  local members, n = {}, math.min(liveCount, MOST_WOKEN)
  for i = 1, n do members[2 * i - 1], members[2 * i] = '0', WAKE_MEMBER .. ':' .. i end
  if n > 0 then call('ZADD', KEY.marker(prefix), unpack(members)) end
end

-- Whether some live executor of the queue (registry entry not expired at `now`) lists task
-- `task` among its handlers, or may have it (its entry lists only the first of its tasks).
local function handledByLive(prefix, task, now)
  local known = handledTasks[task]
  if known ~= nil then return known end
  local found = false
  local live = call('ZRANGEBYSCORE', KEY.workers(prefix), '(' .. str(now), '+inf')
  liveCount = #live
  for _, worker in ipairs(live) do
    local raw = call('GET', KEY.worker(prefix, worker))
    local ok, info = pcall(cjson.decode, raw or '')
    if ok and type(info) == 'table' then
      if (tonumber(info.moreTasks) or 0) > 0 then found = true end
      if type(info.tasks) == 'table' then
        for _, t in ipairs(info.tasks) do
          if t == task then found = true end
        end
      end
    end
    if found then break end
  end
  handledTasks[task] = found
  return found
end

-- What becomes of the unhandled run of the job at `jobKey` (`grace`: the executor's grace, ms,
-- as text): the due time it is passed on to, or false and the error it fails with.
local function unhandledRun(at, jobKey, grace)
  local job = call('HMGET', jobKey, 'd', 'unhandled', 'passes')
  local task = jobTask(job[1])
  local passes = tonumber(job[3]) or 0
  local wait = PASS_DELAY_MS * 2 ^ passes
  if wait > PASS_DELAY_MAX_MS then wait = PASS_DELAY_MAX_MS end
  if handledByLive(at.prefix, task, at.now) then
    if job[2] then call('HDEL', jobKey, 'unhandled') end
    call('HSET', jobKey, 'passes', str(passes + 1))
    wakeEvery(at.prefix)
    return at.now + wait
  end
  local since = tonumber(job[2])
  if not since then
    since = at.now
    call('HSET', jobKey, 'unhandled', at.nowS)
  end
  if at.now - since >= (tonumber(grace) or 0) then
    -- (a retry by hand then waits a grace of its own)
    call('HDEL', jobKey, 'unhandled', 'passes')
    return false, 'UnknownTaskError: unknown task "' .. tostring(task) .. '": no live executor of the queue has a handler for it (none for '
      .. str(at.now - since) .. ' ms)'
  end
  call('HSET', jobKey, 'passes', str(passes + 1))
  return at.now + wait
end
