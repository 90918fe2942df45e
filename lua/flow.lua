--[[
  Submits a flow (Queue.submitFlow): writes its root `waiting-children` with its child counts,
  and commits the rest of the tree, which the producer staged in `fan:<token>:<root id>` (its
  number of jobs, then chunks in the flow format, parents before their children): the staging is
  renamed `fanned:<root id>` and the root listed in `fanouts`, so that fanout.lua submits the
  chunks one call each, as it does a fan-out's committed children (the producer right away, any
  executor's recovery pass should the producer die). One atomic step: before it nothing of the
  flow is submitted, after it all of it is in Redis. A root whose id exists is left as it is (an
  idempotent submit) and the staging deleted.

  KEYS[1] fanouts   (every key is built from ARGV[1])
  ARGV[1] key prefix
  ARGV[2] events stream max length
  ARGV[3] the root: a one-job list in the flow format (FLOW_RECORD), with its number of children
  ARGV[4] the staging's token

  Returns { submitted time (ms), 1 written | 0 its id existed | -1 the staging is gone }.
]]
--- @include "includes/common"
--- @include "includes/changes"
--- @include "includes/addJob"
--- @include "includes/flowJob"

local prefix = ARGV[1]
local now = nowMs()
local f = cmsgpack.unpack(ARGV[3])
local id = f[AT_ID]
local staged = KEY.fanStaging(prefix, id, ARGV[4])
local jobKey = KEY.job(prefix, id)
if call('EXISTS', jobKey) == 1 then
  call('DEL', staged)
  return { now, 0 }
end
if not call('LPOP', staged) then return { now, -1 } end
writeFlowJob(prefix, newJobBatch(), jobKey, str(now), f, 0, true)
if call('EXISTS', staged) == 1 then
  local committed = KEY.fanned(prefix, id)
  call('RENAME', staged, committed)
  call('PERSIST', committed)
  call('ZADD', KEYS[1], str(now), id)
end
flushChanges(prefix, ARGV[2])
return { now, 1 }
