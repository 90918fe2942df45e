--[[
  Submits the next chunk (at most 1,000 jobs) of a fan-out parent's committed children (see
  includes/children): pops it from `fanned:<parent>` and adds its jobs as submit.lua does, each
  unless its id exists (so a chunk submitted twice adds nothing the second time), waking idle
  executors. A chunk that begins FLOW_CHUNK_MARK is in the flow format (FLOW_RECORD): a job that
  has children of its own is written `waiting-children` with its child counts (its children come
  in this chunk after it or in later chunks), and a failure policy other than `fail` is kept in
  the job's hash (see includes/children). A parent whose list is empty afterwards leaves `fanouts`. Every chunk is popped by
  one call only, so any number of executors may pump the same parent at once. An entry that begins
  CROSS.mark is a flow's child in another queue: it moves to the `xsub` outbox (see xsub-in.lua).

  KEYS[1] fanouts   (every key is built from ARGV[1])
  ARGV[1] key prefix
  ARGV[2] events stream max length
  ARGV[3] parent id, or '' for the parent listed longest in `fanouts`

  Returns { parent id (false when no parent has children left to submit), jobs added, chunks left }.
]]
--- @include "includes/common"
--- @include "includes/changes"
--- @include "includes/groupChanges"
--- @include "includes/addJob"
--- @include "includes/flowJob"

local prefix = ARGV[1]
local fanouts = KEY.fanouts(prefix)
local parent = ARGV[3]
if parent == '' then
  parent = call('ZRANGE', fanouts, '0', '0')[1]
  if not parent then return { false, 0, 0 } end
end
local list = KEY.fanned(prefix, parent)
local chunk = call('LPOP', list)
local remaining = call('LLEN', list)
if remaining == 0 then call('ZREM', fanouts, parent) end
if not chunk then return { parent, 0, 0 } end
if stringSub(chunk, 1, 1) == CROSS.mark then
  -- A child in another queue (its subtree): into the `xsub` outbox, for a relay to submit there
  -- (xsub-in.lua); its parent notes the child's queue, for reads of its children.
  local body = stringSub(chunk, 2)
  local child, ref = unpack(cmsgpack.unpack(body), 1, 2)
  local of, index = string.match(child, '^(.*)/(%d+)$')
  call('HSET', KEY.job(prefix, of), CROSS.index .. index, ref)
  call('RPUSH', KEY.crossSubmits(prefix), body)
  return { parent, 0, remaining }
end

local flow = stringSub(chunk, 1, 1) == FLOW_CHUNK_MARK
local width = SUBMIT_WIDTH
if flow then chunk, width = stringSub(chunk, 2), FLOW_WIDTH end
local f = cmsgpack.unpack(chunk)
local submitted = str(nowMs())
local batch = newJobBatch()
local added = 0
-- One EXISTS for the chunk: when none of its children exists (the usual case: a chunk submitted
-- again is the exception), a child needs no check of its own. Its ids are distinct.
local jobKeys = {}
for i = 0, #f - 1, width do jobKeys[#jobKeys + 1] = KEY.job(prefix, f[i + AT_ID]) end
local fresh = call('EXISTS', unpack(jobKeys)) == 0
for k, key in ipairs(jobKeys) do
  local i = (k - 1) * width
  if flow then
    added = added + writeFlowJob(prefix, batch, key, submitted, f, i, fresh)
  elseif writeJob(key, submitted, f, i, nil, fresh) == 1 then
    enqueueLater(prefix, batch, f[i + AT_ID], f[i + AT_GROUP], f[i + AT_PRIORITY] == 'high')
    added = added + 1
  end
end
flushJobs(prefix, batch)
if added > 0 then wake(prefix) end
flushChanges(prefix, ARGV[2])
return { parent, added, remaining }
