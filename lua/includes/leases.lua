--[[
  The `leases` set: one member per run in progress (a job taken and not finished), its lease
  token, a mark of its condition and its job id (leaseMember) -> its lease expiry (ms); and a pad
  member (LEASES_PAD) that keeps the set a skiplist.
]]
--- @include "includes/wire"
--- @include "includes/common"
--- @export LEASES_PAD, LEASES_PAD_EXPIRY, leaseMember, leaseJobId, leasedJobs, runningByGroup

-- The pad member of `leases` (see PAD), with an expiry never reached: as a listpack, the set of
-- a hundred runs in progress cost a take some 30,000 instructions a lease (every member read to
-- find the new one, then to place it). It is no run's (it does not begin with a token).
local LEASES_PAD, LEASES_PAD_EXPIRY = PAD, '+inf'

-- The member of `leases` of the run of job `id` holding lease `token`, the job in `state`
-- (scheduled or running) with cancel flag `cancel`.
local function leaseMember(token, state, cancel, id)
  local mark = SCHEDULED_MARK
  if cancel == '1' then mark = CANCEL_MARK elseif state == 'running' then mark = RUNNING_MARK end
  return token .. mark .. id
end

-- The job id of a member of `leases`; nil for the pad.
local function leaseJobId(member)
  return string.match(member, LEASE_ID_PATTERN)
end

-- Every member of `leases` (the runs in progress; the pad is skipped), with its expiry (ms) at
-- most `maxScore` when given (at most `limit` of them): calls visit(job id, member) for each.
local function leasedJobs(prefix, visit, maxScore, limit)
  local key = KEY.leases(prefix)
  local members
  if maxScore then
    members = call('ZRANGEBYSCORE', key, '-inf', str(maxScore), 'LIMIT', '0', str(limit))
  else
    members = call('ZRANGE', key, '0', '-1')
  end
  for _, member in ipairs(members) do
    local id = leaseJobId(member)
    if id then visit(id, member) end
  end
end

-- The runs in progress (jobs in `leases`, scheduled or running) per group: { group = count }, of
-- every group, or of group `only` alone.
local function runningByGroup(prefix, only)
  local counts = {}
  leasedJobs(prefix, function(id)
    local job = call('HMGET', KEY.job(prefix, id), 'state', 'group')
    if (job[1] == 'scheduled' or job[1] == 'running') and (not only or job[2] == only) then
      counts[job[2]] = (counts[job[2]] or 0) + 1
    end
  end)
  return counts
end
