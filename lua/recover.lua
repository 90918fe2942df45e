--[[
  Recovery pass, run by every live executor from time to time:
  - a job whose lease has expired (its executor died, froze or was cut off) ends its run as a
    failed attempt: stuck with backoff, or failed after maxRetries;
  - with ARGV[5] set, jobs still marked with that executor id are treated the same way (an
    executor starting again under its old id clears its stale marks);
  - executors whose registry entry has expired are dropped from the registry;
  - finished jobs older than their keep age are removed, at most ARGV[8] per state.

  KEYS[1] leases   (every key is built from ARGV[1])
  ARGV[1] key prefix
  ARGV[2] events stream max length
  ARGV[3] retry delay base (ms)
  ARGV[4] most expired leases to handle in this call
  ARGV[5] executor id whose stale marks to clear, or ''
  ARGV[6] keep age for success (ms, -1: forever)
  ARGV[7] keep age for failed and cancelled (ms, -1: forever)
  ARGV[8] most finished jobs to remove per state in this call
  ARGV[9] lease (ms), optional: expired leases are left alone while the Redis server has been up
          for less than this, so that executors get one lease to heartbeat again after a Redis
          restart (every lease expires while the server is down)
  ARGV[10] the server time the executor expects (ms, its own estimate; '': none), see includes/clock
  ARGV[11] how far off that may be (ms); ARGV[10] and [11] are read only with ARGV[9] given

  No lease and no registry entry counts as expired within a lease of a forward jump of the
  server's clock (includes/clock): the live executors renew theirs from the new time meanwhile.

  Returns { recovered job ids, removed finished jobs, the server's time (ms), the recovered jobs'
  tasks and groups (task, group, ... in the order of their ids) }.
]]
--- @include "includes/common"
--- @include "includes/changes"
--- @include "includes/leases"
--- @include "includes/setWrites"
--- @include "includes/finishJob"
--- @include "includes/jobs"
--- @include "includes/children"
--- @include "includes/batches"
--- @include "includes/clock"
--- @include "includes/dedup"
--- @include "includes/jobKeys"

local prefix = ARGV[1]
local retryDelay = tonumber(ARGV[3])
local mine = ARGV[5]
local now = nowMs()
-- job id -> why its run ends, and -> the member of `leases` it was found by
local victims, members = {}, {}
local settled = true
if ARGV[9] and ARGV[9] ~= '' then
  -- pcall: an ACL user without INFO (it is in @dangerous) just gets no grace.
  local info = redis.pcall('INFO', 'server')
  local uptime = type(info) == 'string' and tonumber(string.match(info, 'uptime_in_seconds:(%d+)')) or nil
  settled = uptime == nil or uptime * 1000 >= tonumber(ARGV[9])
end
if ARGV[9] and ARGV[9] ~= '' then clockCheck(prefix, now, ARGV[10], ARGV[11], tonumber(ARGV[9])) end
local jumped = clockJumped(prefix)
if jumped then settled = false end
if settled then
  leasedJobs(prefix, function(id, member)
    victims[id], members[id] = 'lease expired', member
  end, now, tonumber(ARGV[4]))
end
if mine ~= '' then
  leasedJobs(prefix, function(id, member)
    if call('HGET', KEY.job(prefix, id), 'worker') == mine then
      victims[id], members[id] = 'executor ' .. mine .. ' restarted while running it', member
    end
  end)
end

local recovered, labels = {}, {}
local at = beginFinishes(prefix, now)
for id, reason in pairs(victims) do
  local jobKey = KEY.job(prefix, id)
  local job = call('HMGET', jobKey, 'takeSeq', 'state', 'cancel', 'group')
  if job[2] == 'running' or job[2] == 'scheduled' then
    local held = call('HMGET', jobKey, 'worker', 'd')
    local state = finishJob(at, jobKey, id, job, OUTCOME_FAILED, reason .. ' (executor ' .. (held[1] or '?') .. ')', retryDelay)
    recovered[#recovered + 1] = id
    if state == 'failed' or state == 'cancelled' then releaseDedupOf(prefix, id, true) end
    labels[#labels + 1] = held[2] and jobTask(held[2]) or ''
    labels[#labels + 1] = job[4] or ''
    if isChild(prefix, id) then childEnded(id, job[2] == 'running', state) end
    batches.ended(batches.of(held[2]), state)
    -- the children its run staged, if any, are not committed
    call('DEL', KEY.fanStaging(prefix, id, job[1]))
  end
  -- its lease ends with the run, or was stale
  local rems = laterList(laterRems, KEY.leases(prefix))
  rems[#rems + 1] = members[id]
end
finishBatch(prefix)
flushChildren(prefix, now)
batches.flush(prefix, now)

-- Recovered jobs are stuck (or failed), not runnable yet: wake one executor, whose take answers
-- the next due time, so it sleeps until the retry instead of until its fallback timer.
if #recovered > 0 then wake(prefix) end

if not jumped then
  local gone = call('ZRANGEBYSCORE', KEY.workers(prefix), '-inf', now)
  if #gone > 0 then call('ZREM', KEY.workers(prefix), unpack(gone)) end
end

local removed = 0
local batch = tonumber(ARGV[8])
local function trimByAge(state, age)
  age = tonumber(age)
  if age < 0 then return end
  local key = KEY.done(prefix, state)
  local ids = call('ZRANGEBYSCORE', key, '-inf', now - age, 'LIMIT', 0, batch)
  if #ids == 0 then return end
  local doomed = addJobKeys({}, prefix, ids, crossDeliveredHere(prefix))
  for k = 1, #doomed, 1000 do call('DEL', unpack(doomed, k, math.min(#doomed, k + 999))) end
  call('ZREM', key, unpack(ids))
  countDelta[state] = (countDelta[state] or 0) - #ids
  removed = removed + #ids
end
trimByAge('success', ARGV[6])
trimByAge('failed', ARGV[7])
trimByAge('cancelled', ARGV[7])

flushChanges(prefix, ARGV[2])
return { recovered, removed, now, labels }
