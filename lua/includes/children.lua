--[[
  Fan-out children (ctx.fanOut): a child's id is `<parent id>/<index>`, and its parent's job hash
  counts its children (CHILD_FIELDS: total, running, and one count per final state). The scripts
  that start or end a child's run note it here (childStarted, childEnded; the executor flags the
  runs of children, so that other runs cost nothing), and flushChildren applies the changes of a
  call: one HINCRBY per parent and count, and, when a parent's last child ends, its `ended` time
  and one children-ended event (and a periodic.failed event when the parent is a periodic run and
  a child failed: such a run ends when its children end, failed if any failed).
  A parent removed by retention is not written again.

  Committed children wait, packed as submit calls' job lists (chunks of at most 1,000 jobs), in
  the parent's list `fanned:<parent>`, listed in `fanouts` (parent id -> commit time) until
  fanout.lua has submitted every chunk.
]]
--- @include "includes/wire"
--- @include "includes/common"
--- @include "includes/changes"
--- @include "includes/periodic"
--- @export parentOf, childStarted, childEnded, isChild, flushChildren

-- The parent id of child `id` (what precedes its last '/').
local function parentOf(id)
  return string.match(id, '^(.*)/%d+$')
end

-- The count changes of this call per parent ({ field -> delta }), in first-change order.
local childDeltas, childParents = {}, {}
onBeginCall(function()
  if childParents[1] ~= nil then
    childDeltas = {}
    clearList(childParents)
  end
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
  if field then childDelta(parent, field, 1) end
end

-- Whether job `id` is a fan-out child (a slow path's check, for scripts without the executor's
-- flag: its id has a child's form and that parent fanned out).
local function isChild(prefix, id)
  local parent = parentOf(id)
  return parent ~= nil and call('HEXISTS', prefix .. 'j:' .. parent, CHILD_FIELDS.total) == 1
end

-- Applies the count changes of this call (see above).
local function flushChildren(prefix, now)
  for i = 1, #childParents do
    local parent = childParents[i]
    local key = prefix .. 'j:' .. parent
    local deltas = childDeltas[parent]
    local total = tonumber(call('HGET', key, CHILD_FIELDS.total))
    if total then
      local endedBy = 0
      for field, d in pairs(deltas) do
        if d ~= 0 then
          call('HINCRBY', key, field, str(d))
          if field ~= CHILD_FIELDS.running then endedBy = endedBy + d end
        end
      end
      if endedBy > 0 then
        local c = call('HMGET', key, CHILD_FIELDS.success, CHILD_FIELDS.failed, CHILD_FIELDS.cancelled, 'tracker', 'occurrence')
        local s, f, x = tonumber(c[1]) or 0, tonumber(c[2]) or 0, tonumber(c[3]) or 0
        local ended = s + f + x
        if ended >= total and ended - endedBy < total then
          call('HSET', key, CHILD_FIELDS.ended, str(now))
          childrenDone(parent, total, s, f, x)
          if c[4] and c[4] ~= '' then
            if f > 0 then periodicFailed(parent, c[4], c[5], f .. ' of ' .. total .. ' children failed') end
            -- (the run of a periodic task has ended with its children)
            pRunEnded(prefix, c[4])
          end
        end
      end
    end
  end
end
