--[[
  Takes up to N jobs for one executor, fairly: groups are picked round-robin from the shared
  rotation (a weight-w group keeps the turn for w takes); inside a group a runnable stuck job
  comes first, then the counting scheme (h, l) picks high or low priority, falling back to the
  other when one is empty; FIFO inside a priority. Due stuck jobs are promoted first.
  Each taken job is marked `scheduled` with the executor id, gets a lease in `leases`, and its
  take sequence number (takeSeq), which is also the lease token.

  KEYS[1] rotation (every key is built from ARGV[1])
  ARGV[1] key prefix
  ARGV[2] events stream max length
  ARGV[3] executor id
  ARGV[4] N, most jobs to take
  ARGV[5] counting scheme: high count
  ARGV[6] counting scheme: low count
  ARGV[7] lease (ms)

  Returns { jobs, next due time in `delayed` (a retry, a delayed job, a parked group; ms) or -1 },
  jobs as includes/take describes them.
]]
--- @include "includes/common"
--- @include "includes/changes"
--- @include "includes/take"

local jobs, nextDue = takeJobs(ARGV[1], ARGV[3], num(ARGV[4]), num(ARGV[5]), num(ARGV[6]), num(ARGV[7]), nowMs())
flushChanges(ARGV[1], ARGV[2])
return { jobs, nextDue }
