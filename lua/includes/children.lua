--[[
  Children and the jobs that wait on them. A child's id is `<parent id>/<index>` (ctx.fanOut, and
  every job of a flow below its root), and its parent's job hash counts its children
  (CHILD_FIELDS: total, running, and one count per final state). The scripts that start or end a
  child's run note it here (childStarted, childEnded; the executor flags the runs of children, so
  that other runs cost nothing), and flushChildren applies the changes of a call: one HINCRBY per
  parent and count, and, when a parent's last child ends, its `ended` time and one children-ended
  event (and a periodic.failed event when the parent is a periodic run and a child failed: such a
  run ends when its children end, failed if any failed). A parent removed by retention is not
  written again.

  The job that waits (its *waiter*) is the parent itself while it is `waiting-children` (a flow's
  parent), or the parent's continuation (CHILD_FIELDS.continuation: ctx.fanOut's `after`), a job
  written `waiting-children` when the fan-out committed. flushChildren applies each failed child's
  policy (FAILURE_POLICY, the child's FLOW_FIELDS.policy) to the waiter: fail it (default), ignore
  the failure, remove the dependency (the child counts as removed, not failed), or release the
  waiter at once (continue); and it releases the waiter to `waiting` when the last child ends.
  Only a waiter still `waiting-children` is released or failed, so a child ending again (retried
  after its parent went on) changes nothing but the counts. A waiter that fails is itself a child
  of its own parent (a flow's inner node): its end is counted there in the same call, so a
  failure climbs the tree at once. A retried child re-opens the waiter its failure failed
  (reopenWaiter).

  Committed children wait, packed as submit calls' job lists (chunks of at most 1,000 jobs), in
  the parent's list `fanned:<parent>`, listed in `fanouts` (parent id -> commit time) until
  fanout.lua has submitted every chunk.

  A child in another queue (`cross`, docs/architecture.md#flows) finds no parent hash in its own
  slot: its final end (or its re-open, when retried) is pushed to its queue's `xend` ZSET with a
  sequence number per child, for a relay to deliver (xend-in.lua, in the parent's slot), where
  cross.deliver applies it as a local child's end, refusing one not newer than the last applied.
]]
--- @include "includes/wire"
--- @include "includes/common"
--- @include "includes/changes"
--- @include "includes/jobs"
--- @include "includes/groupChanges"
--- @include "includes/periodic"
--- @include "includes/waitIndex"
--- @include "includes/jobKeys"
--- @export parentOf, childStarted, childEnded, isChild, flushChildren, releaseWaiter, reopenWaiter, cross

-- The parent id of child `id` (what precedes its last '/').
local function parentOf(id)
  return string.match(id, '^(.*)/%d+$')
end

-- The count changes of this call per parent ({ field -> delta }), in first-change order, and the
-- children that failed in this call per parent.
local childDeltas, childParents, childFailures = {}, {}, {}
-- Whether this call released a waiter (its group's list changed after the batch's flush).
local releasedAny = false
-- Children in other queues: `ends` the final ends of this call per parent ({ id, state, ... }),
-- read only when the parent is not in this slot; `policy` the failure policies of delivered ends
-- (set anew by each xend-in.lua call: the only call that delivers).
local cross = { ends = {}, policy = {} }
onBeginCall(function()
  if childParents[1] ~= nil then
    childDeltas = {}
    childFailures = {}
    cross.ends = {}
    clearList(childParents)
  end
  releasedAny = false
end)

local function childDelta(parent, field, d)
  local deltas = childDeltas[parent]
  if not deltas then
    deltas = {}
    childDeltas[parent] = deltas
    childParents[#childParents + 1] = parent
  end
  deltas[field] = (deltas[field] or 0) + d
end

-- The run of child `id` started.
local function childStarted(id)
  local parent = parentOf(id)
  if parent then childDelta(parent, CHILD_FIELDS.running, 1) end
end

-- The count of each final state.
local FINAL_COUNT = { success = CHILD_FIELDS.success, failed = CHILD_FIELDS.failed, cancelled = CHILD_FIELDS.cancelled }

-- The run of child `id` ended in `state` (its run had started when `wasRunning`): a final state
-- is counted; a child back to waiting or stuck only stops running.
local function childEnded(id, wasRunning, state)
  local parent = parentOf(id)
  if not parent then return end
  if wasRunning then childDelta(parent, CHILD_FIELDS.running, -1) end
  local field = FINAL_COUNT[state]
  if field then
    childDelta(parent, field, 1)
    local ends = cross.ends[parent]
    if not ends then
      ends = {}
      cross.ends[parent] = ends
    end
    ends[#ends + 1], ends[#ends + 2] = id, state
  end
  if state == 'failed' then
    local failed = childFailures[parent]
    if not failed then
      failed = {}
      childFailures[parent] = failed
    end
    failed[#failed + 1] = id
  end
end

-- Whether job `id` is a child (a slow path's check, for scripts without the executor's flag: its
-- id has a child's form and that parent counts children).
local function isChild(prefix, id)
  local parent = parentOf(id)
  return parent ~= nil and (call('HEXISTS', KEY.job(prefix, parent), CHILD_FIELDS.total) == 1
    or call('HEXISTS', KEY.job(prefix, id), CROSS.queue) == 1)
end

-- Pushes to the `xend` outbox the end of child `id` whose parent is in another queue (`state` a
-- final state, or 'open' for a re-open), when it is such a child; numbered per child (CROSS.seq).
function cross.send(prefix, id, state, now)
  local key = KEY.job(prefix, id)
  local c = call('HMGET', key, CROSS.queue, FLOW_FIELDS.policy)
  if not c[1] then return end
  local seq = call('HINCRBY', key, CROSS.seq, 1)
  call('ZADD', KEY.crossEnds(prefix), str(now), cmsgpack.pack({ c[1], id, seq, state, c[2] or '' }))
end

-- Releases waiter `id` to `waiting` (at the back of its priority's list) when it is still
-- `waiting-children`; `why`: 'children' (all ended) or 'continue' (a child's policy). The group
-- change is deferred (includes/groupChanges): the caller flushes the groups.
local function releaseWaiter(prefix, id, why)
  local key = KEY.job(prefix, id)
  local j = call('HMGET', key, 'state', 'group', 'd')
  if j[1] ~= WAITING_CHILDREN then return end
  local high = describeJob(j[3]) == 'high'
  call('HSET', key, 'state', 'waiting')
  call('LPUSH', KEY.groupList(prefix, j[2], high and 'h' or 'l'), id)
  deferGroup(j[2], high and 'nh' or 'nl', 1)
  left(WAITING_CHILDREN)
  waitIndex.remove(prefix, id)
  changed(id, 'waiting')
  jobReleased(id, why)
  releasedAny = true
end

-- Fails waiter `id` (still `waiting-children`) because its child `child` failed (policy fail).
local function failWaiter(prefix, id, child, now)
  local key = KEY.job(prefix, id)
  if call('HGET', key, 'state') ~= WAITING_CHILDREN then return end
  local err = 'child ' .. child .. ' failed'
  local nowS = str(now)
  call('HSET', key, 'state', 'failed', 'finished', nowS, 'error', err, FLOW_FIELDS.failedBy, child)
  call('ZADD', KEY.done(prefix, 'failed'), nowS, id)
  left(WAITING_CHILDREN)
  waitIndex.remove(prefix, id)
  changed(id, 'failed', err)
  -- (a flow's inner node ended for its own parent: counted there in this call, or sent there)
  if isChild(prefix, id) then childEnded(id, false, 'failed') end
end

-- Re-opens the waiter that child `child` of `parent` failed (policy fail), now that the child is
-- retried: back to `waiting-children`; a waiter that is itself a child is counted as not ended
-- by its own parent again, and re-opens that parent's waiter in turn.
local function reopenWaiter(prefix, parent, child)
  local key = KEY.job(prefix, parent)
  local p = call('HMGET', key, 'state', FLOW_FIELDS.failedBy, CHILD_FIELDS.continuation)
  local waiter, wkey = parent, key
  if p[1] ~= 'failed' or p[2] ~= child then
    if not p[3] then return end
    waiter, wkey = p[3], KEY.job(prefix, p[3])
    local w = call('HMGET', wkey, 'state', FLOW_FIELDS.failedBy)
    if w[1] ~= 'failed' or w[2] ~= child then return end
  end
  call('HDEL', wkey, 'finished', 'error', FLOW_FIELDS.failedBy)
  call('HSET', wkey, 'state', WAITING_CHILDREN)
  call('ZREM', KEY.done(prefix, 'failed'), waiter)
  left('failed')
  changed(waiter, WAITING_CHILDREN)
  waitIndex.add(prefix, waiter, wkey)
  local up = parentOf(waiter)
  if up and isChild(prefix, waiter) then
    local upKey = KEY.job(prefix, up)
    call('HINCRBY', upKey, CHILD_FIELDS.failed, '-1')
    call('HDEL', upKey, CHILD_FIELDS.ended)
    reopenWaiter(prefix, up, waiter)
  end
end

-- Delivers the end (or re-open, `state` 'open') number `seq` of child `child` from another queue
-- to its parent here, unless a number as high was delivered (`xd:<parent>`: child -> "seq field",
-- the count field its last delivered end added to, '' for none): the count of an earlier end is
-- taken back (re-opening the waiter it failed), the new end counted as a local child's. The caller
-- runs flushChildren. Answers 1 when applied, 0 when refused or the parent is gone.
function cross.deliver(prefix, child, seq, state, policy)
  local parent = parentOf(child)
  if not parent then return 0 end
  local parentKey = KEY.job(prefix, parent)
  if call('HEXISTS', parentKey, CHILD_FIELDS.total) == 0 then return 0 end
  local d = KEY.crossDelivered(prefix, parent)
  local last = call('HGET', d, child)
  local lastSeq, lastField = 0, ''
  if last then
    local at = string.find(last, ' ', 1, true)
    lastSeq, lastField = tonumber(string.sub(last, 1, at - 1)), string.sub(last, at + 1)
  end
  if seq <= lastSeq then return 0 end
  if lastField ~= '' then
    call('HINCRBY', parentKey, lastField, '-1')
    call('HDEL', parentKey, CHILD_FIELDS.ended)
    if lastField == CHILD_FIELDS.failed then reopenWaiter(prefix, parent, child) end
  end
  local field = FINAL_COUNT[state] or ''
  if field ~= '' then
    if state == 'failed' and policy == FAILURE_POLICY.remove then field = CHILD_FIELDS.removed end
    cross.policy[child] = policy
    childEnded(child, false, state)
  end
  if not last then markCrossDelivered(prefix) end
  call('HSET', d, child, seq .. ' ' .. field)
  return 1
end

-- Applies the count changes of this call (see above), and the waiters' releases and failures.
local function flushChildren(prefix, now)
  local i = 1
  while i <= #childParents do
    local parent = childParents[i]
    i = i + 1
    -- (taken: a change that comes later in this call, a failure climbing the tree, lists the
    -- parent again)
    local deltas, failures = childDeltas[parent], childFailures[parent]
    childDeltas[parent], childFailures[parent] = nil, nil
    local key = KEY.job(prefix, parent)
    local p = call('HMGET', key, CHILD_FIELDS.total, 'state', CHILD_FIELDS.continuation)
    local total = tonumber(p[1])
    if total and deltas then
      local waiter = p[2] == WAITING_CHILDREN and parent or p[3]
      if waiter and failures then
        for k = 1, #failures do
          local policy = cross.policy[failures[k]] or call('HGET', KEY.job(prefix, failures[k]), FLOW_FIELDS.policy)
          if policy == FAILURE_POLICY.remove then
            deltas[CHILD_FIELDS.failed] = deltas[CHILD_FIELDS.failed] - 1
            deltas[CHILD_FIELDS.removed] = (deltas[CHILD_FIELDS.removed] or 0) + 1
          elseif policy == FAILURE_POLICY.continue then
            releaseWaiter(prefix, waiter, 'continue')
          elseif policy ~= FAILURE_POLICY.ignore then
            failWaiter(prefix, waiter, failures[k], now)
          end
        end
      end
      local endedBy = 0
      for field, d in pairs(deltas) do
        if d ~= 0 then
          call('HINCRBY', key, field, str(d))
          if field ~= CHILD_FIELDS.running then endedBy = endedBy + d end
        end
      end
      if endedBy > 0 then
        local c = call('HMGET', key, CHILD_FIELDS.success, CHILD_FIELDS.failed, CHILD_FIELDS.cancelled, 'tracker',
          'occurrence', CHILD_FIELDS.removed)
        local s, f, x = tonumber(c[1]) or 0, tonumber(c[2]) or 0, tonumber(c[3]) or 0
        local ended = s + f + x + (tonumber(c[6]) or 0)
        if ended >= total and ended - endedBy < total then
          call('HSET', key, CHILD_FIELDS.ended, str(now))
          childrenDone(parent, total, s, f, x)
          if c[4] and c[4] ~= '' then
            if f > 0 then periodicFailed(parent, c[4], c[5], f .. ' of ' .. total .. ' children failed') end
            -- (the run of a periodic task has ended with its children)
            pRunEnded(prefix, c[4])
          end
        end
        if ended >= total and waiter then releaseWaiter(prefix, waiter, 'children') end
      end
    elseif not total then
      -- (no parent here: children of a parent in another queue send their ends)
      local ends = cross.ends[parent]
      if ends then
        for k = 1, #ends, 2 do cross.send(prefix, ends[k], ends[k + 1], now) end
      end
    end
  end
  if releasedAny and flushGroups(prefix) then wake(prefix) end
end
