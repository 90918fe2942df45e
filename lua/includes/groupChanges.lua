--[[
  Group counter changes collected during one script call and applied together by flushGroups: a
  hundred finished jobs of one group cost one update, and a thousand groups one read and one
  write.
]]
--- @include "includes/common"
--- @include "includes/groupRecord"
--- @include "includes/groups"
--- @export deferGroup, flushGroups

-- One map of increments per counter (group -> n), so that a group costs no table of its own;
-- the maps and the groups' list are kept across calls and emptied as they are applied.
local DEFERRED = { 'nr', 'nh', 'nl', 'stuck', 'running', 'logged' }
local pendingDelta = {}
for i = 1, #DEFERRED do pendingDelta[DEFERRED[i]] = {} end
local pendingOrder, pending = {}, {}

-- Adds n to counter `field` of `group` (one of DEFERRED) when the changes are applied.
local function deferGroup(group, field, n)
  if not pending[group] then
    pending[group] = true
    pendingOrder[#pendingOrder + 1] = group
  end
  local byGroup = pendingDelta[field]
  byGroup[group] = (byGroup[group] or 0) + n
end

-- Empties the collected changes, adding them to the groups of `map` when given. Each map is
-- walked over the increments it holds (a bulk of jobs over many groups has one each), not over
-- every counter of every group.
local function takePending(map)
  for i = 1, #DEFERRED do
    local field = DEFERRED[i]
    local byGroup = pendingDelta[field]
    for group, d in next, byGroup do
      if map then
        local g = map[group]
        g[field] = g[field] + d
      end
      byGroup[group] = nil
    end
  end
  for i = 1, #pendingOrder do pending[pendingOrder[i]] = nil end
  clearList(pendingOrder)
end

onBeginCall(function()
  if pendingOrder[1] then takePending() end
end)

-- What flushGroups builds (reused: the library keeps them across calls): the groups it updates
-- field by field, and the records it rewrites in place (beginning with the pad, see storeGroups).
local fullGroups, lengthsOnly = {}, { GROUPS_PAD_FIELD, GROUPS_PAD }

-- Applies the collected changes. A group listed in the rotation, with no limit, not paused, that
-- is only given jobs (the usual case of a submit, and of a group visited by a bulk) stays as it
-- is but for the lengths of its lists (addListLengths), without unpacking and packing its record
-- whole. Every other group goes through storeGroups. Returns true when any of the updated groups
-- is in the rotation afterwards.
local function flushGroups(prefix)
  local n = #pendingOrder
  if n == 0 then return false end
  local dnr, dnh, dnl = pendingDelta.nr, pendingDelta.nh, pendingDelta.nl
  local dstuck, drunning, dlogged = pendingDelta.stuck, pendingDelta.running, pendingDelta.logged
  local map, any = {}, false
  local nf, nl = 0, 2
  for i = 1, n, 1000 do
    local v, last = readGroups(prefix, pendingOrder, i)
    for k = i, last do
      local group, r = pendingOrder[k], v[k - i + 1]
      local a, b, c = dnr[group] or 0, dnh[group] or 0, dnl[group] or 0
      local patched = r and a >= 0 and b >= 0 and c >= 0 and a + b + c > 0 and not dstuck[group]
        and not drunning[group] and not dlogged[group] and addListLengths(r, a, b, c)
      if patched then
        lengthsOnly[nl + 1], lengthsOnly[nl + 2], nl = group, patched, nl + 2
        dnr[group], dnh[group], dnl[group] = nil, nil, nil
        any = true
      else
        fullGroups[nf + 1], nf = group, nf + 1
        map[group] = unpackGroup(r)
      end
    end
  end
  for i = #lengthsOnly, nl + 1, -1 do lengthsOnly[i] = nil end
  if nl > 2 then sendChunks('HSET', KEY.groups(prefix), lengthsOnly, nl, 1000) end
  -- (the full updates: every increment left is of one of those groups)
  takePending(map)
  for i = #fullGroups, nf + 1, -1 do fullGroups[i] = nil end
  if nf > 0 and storeGroups(prefix, fullGroups, map) then any = true end
  clearList(fullGroups)
  return any
end
