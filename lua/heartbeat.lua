--[[
  An executor's heartbeat: registers it in the executor registry and extends the leases of the
  jobs it holds. Reports jobs whose lease it lost (recovered or taken over meanwhile) and jobs
  whose cancellation was requested, so the executor can abort them.

  KEYS[1] workers  (every key is built from ARGV[1])
  ARGV[1] key prefix
  ARGV[2] executor id
  ARGV[3] lease (ms)
  ARGV[4] registry entry time to live (ms)
  ARGV[5] executor info (JSON: host, pid, started, concurrency, running, ttlMs, version, tasks,
        moreTasks)
  ARGV[6] the server time the executor expects (ms, its own estimate; '': none), see includes/clock
  ARGV[7] how far off that may be (ms)
  ARGV[8..] pairs: job id, lease token

  Returns { lost runs, flat: job id, lease token (a job may be held under two tokens: a run
  and an earlier run's outcome still being delivered, and only one of them lost), ids to cancel,
  the server's time (ms) }.
]]
--- @include "includes/common"
--- @include "includes/leases"
--- @include "includes/clock"

local prefix = ARGV[1]
local worker = ARGV[2]
local lease = num(ARGV[3])
local ttl = num(ARGV[4])
local now = nowMs()
clockCheck(prefix, now, ARGV[6], ARGV[7], lease)
call('ZADD', KEY.workers(prefix), now + ttl, worker)
call('SET', KEY.worker(prefix, worker), ARGV[5], 'PX', ttl)
local lost, cancel = {}, {}
for i = 8, #ARGV, 2 do
  local id = ARGV[i]
  local job = call('HMGET', KEY.job(prefix, id), 'takeSeq', 'state', 'cancel')
  if job[1] == ARGV[i + 1] and (job[2] == 'running' or job[2] == 'scheduled') then
    call('ZADD', KEY.leases(prefix), 'XX', str(now + lease), leaseMember(job[1], job[2], job[3], id))
    if job[3] == '1' then cancel[#cancel + 1] = id end
  else
    lost[#lost + 1], lost[#lost + 2] = id, ARGV[i + 1]
  end
end
return { lost, cancel, now }
