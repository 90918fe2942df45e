--[[
  Receives a flow's child from another queue (the parent's `xsub` outbox, relayed by
  src/queue/cross.ts): writes the child, marked with its parent's queue (CROSS.queue), as a
  flow's job (`waiting-children` when it has children of its own, whose chunks become its
  `fanned:<id>` list for fanout.lua), unless this queue received that child id before (`xin`,
  child id -> receive time, kept a day) or holds a job of that id. So a relay repeated (killed
  between this call and its acknowledgement) submits nothing twice.

  KEYS[1] xin   (every key is built from ARGV[1])
  ARGV[1] key prefix
  ARGV[2] events stream max length
  ARGV[3] the entry: MessagePack list of the child id, this queue's ref, the parent's queue ref,
          the child (a one-job list in the flow format), then its subtree's chunks

  Returns 1 when written, 0 when refused as a repeat.
]]
--- @include "includes/common"
--- @include "includes/changes"
--- @include "includes/groupChanges"
--- @include "includes/addJob"
--- @include "includes/flowJob"

local prefix = ARGV[1]
local xin = KEYS[1]
local now = nowMs()
local e = cmsgpack.unpack(ARGV[3])
local id = e[1]
local jobKey = KEY.job(prefix, id)
-- (entries older than a day leave, a bounded number a call)
local old = call('ZRANGEBYSCORE', xin, '-inf', str(now - 86400000), 'LIMIT', '0', '100')
if #old > 0 then call('ZREM', xin, unpack(old)) end
if call('ZSCORE', xin, id) or call('EXISTS', jobKey) == 1 then return 0 end
call('ZADD', xin, str(now), id)
local batch = newJobBatch()
writeFlowJob(prefix, batch, jobKey, str(now), cmsgpack.unpack(e[4]), 0, true)
call('HSET', jobKey, CROSS.queue, e[3])
if #e > 4 then
  local committed = KEY.fanned(prefix, id)
  call('RPUSH', committed, unpack(e, 5))
  call('ZADD', KEY.fanouts(prefix), str(now), id)
end
flushJobs(prefix, batch)
wake(prefix)
flushChanges(prefix, ARGV[2])
return 1
