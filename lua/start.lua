--[[
  Marks taken jobs `running` as their executor starts them. A job whose lease token no longer
  matches (taken over by another executor) is left alone and reported. A start that was already
  applied (the client resent it after a reconnect) is accepted again without change.

  A started job's lease member is marked running (see includes/leases) and its lease
  extended to now + ARGV[3] (a start is a heartbeat too).

  KEYS[1] leases   (every key is built from ARGV[1])
  ARGV[1] key prefix
  ARGV[2] events stream max length
  ARGV[3] lease (ms)
  ARGV[4] how many of the pairs, the last ones, are runs of fan-out children (their parents count
          them running, see includes/children)
  ARGV[5..] pairs: job id, lease token (takeSeq)

  A run of a periodic task may be dropped by its tolerance (see includes/periodicStart); the
  executor then ends it cancelled without calling its handler.

  Returns { started time (ms), ids whose lease is lost, ids of dropped periodic runs }.
]]
--- @include "includes/common"
--- @include "includes/changes"
--- @include "includes/leases"
--- @include "includes/setWrites"
--- @include "includes/periodicStart"
--- @include "includes/children"

local prefix = ARGV[1]
local now = nowMs()
local lost = {}
local dropped = {}
local leasesKey = KEY.leases(prefix)
local leaseAt = str(now + num(ARGV[3]))
local childFrom = #ARGV - 2 * num(ARGV[4]) + 1
for i = 5, #ARGV, 2 do
  local id, token = ARGV[i], ARGV[i + 1]
  local jobKey = KEY.job(prefix, id)
  local job = call('HMGET', jobKey, 'takeSeq', 'state', 'tracker', 'worker', 'dropped', 'cancel')
  if job[1] == token and job[2] == 'scheduled' then
    if job[3] and job[3] ~= '' and periodicStart(prefix, now, id, job[3], job[4]) then dropped[#dropped + 1] = id end
    call('HSET', jobKey, 'state', 'running', 'started', str(now))
    left('scheduled')
    changed(id, 'running')
    if i >= childFrom then childStarted(id) end
    -- (a job whose cancel was requested keeps its member: the mark says so whatever the state)
    if job[6] ~= '1' then
      local rems, adds = laterList(laterRems, leasesKey), laterList(laterAdds, leasesKey)
      rems[#rems + 1] = leaseMember(token, 'scheduled', nil, id)
      adds[#adds + 1], adds[#adds + 2] = leaseAt, leaseMember(token, 'running', nil, id)
    end
  elseif job[1] == token and job[2] == 'running' then
    -- A repeat of a start already applied (resent after a reconnect): nothing to do.
    if job[5] then dropped[#dropped + 1] = id end
  else
    lost[#lost + 1] = id
  end
end
flushLater()
if childFrom <= #ARGV then flushChildren(prefix, now) end
flushChanges(prefix, ARGV[2])
return { now, lost, dropped }
