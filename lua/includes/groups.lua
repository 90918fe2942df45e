--[[
  The `groups` hash: reading the records of the groups a call visits, writing them back with the
  rotation places they gain, and which groups count their runs (those with a limit).
]]
--- @include "includes/common"
--- @include "includes/groupRecord"
--- @export GROUPS_PAD_FIELD, GROUPS_PAD, readGroups, loadGroups, hasLimits, countsRunning, packed
--- @export goneGroups, storeGroups

-- The pad of `groups` (see PAD): as a listpack, at a few hundred groups each group a call reads
-- or writes would cost more than the rest of its job. Every write of `groups` also writes it,
-- as a field that no group can be (the empty name).
local GROUPS_PAD_FIELD, GROUPS_PAD = '', PAD

-- The packed records of names[i] on, a thousand at most (one HMGET), and the index of the last read.
local function readGroups(prefix, names, i)
  local last = math.min(#names, i + 999)
  return call('HMGET', KEY.groups(prefix), unpack(names, i, last)), last
end

-- The state of each group in `names` (one HMGET per thousand; see unpackGroup), added to `map`
-- by name (a group `map` holds already keeps what it holds).
local function loadGroups(prefix, names, map)
  for i = 1, #names, 1000 do
    local v, last = readGroups(prefix, names, i)
    for k = i, last do
      local name = names[k]
      if not map[name] then map[name] = unpackGroup(v[k - i + 1]) end
    end
  end
  return map
end

-- A group's running jobs are counted (its field `running`) only while it has a concurrency
-- limit, the one thing the count decides: a take from a limited group adds one, and the end of a
-- run of a group in `limited` takes one off, so that the end of a run of any other group touches
-- no group state. Setting a limit counts the group's runs in `leases` (runningByGroup), lifting
-- it zeroes the count: both in the same atomic call that changes `limited`, so every run is
-- counted once. Whether `limited` exists is read once per call (most queues have no limits).
local anyLimited
onBeginCall(function() anyLimited = nil end)

local function hasLimits(prefix)
  if anyLimited == nil then anyLimited = call('EXISTS', KEY.limited(prefix)) == 1 end
  return anyLimited
end

local function countsRunning(prefix, group)
  return hasLimits(prefix) and call('SISMEMBER', KEY.limited(prefix), group) == 1
end

-- The argument lists group writes build (reused: the library keeps them across calls): records
-- (HSET, beginning with the pad field), groups joining the rotation, groups removed (HDEL).
local packed, goneGroups = { GROUPS_PAD_FIELD, GROUPS_PAD }, {}
local joining = {}

-- Writes the state of the groups `order` names (from `map`, see unpackGroup) and lists at the
-- back of the round-robin rotation each that may be picked and is not listed. A group that may
-- not be picked stays listed until a take pops it (see `rotation`). An idle group is removed from
-- the hash, so that it holds only groups with jobs, settings or a place of their own, however
-- many groups come and go. (A take writes the groups it visits itself, see includes/take.)
-- Returns true when any of them may be picked afterwards.
local function storeGroups(prefix, order, map)
  local np, nj, ng = 2, 0, 0
  local any = false
  for _, group in ipairs(order) do
    local g = map[group]
    if eligibleState(g.paused and 1 or 0, g.limit, g.running, g.nr + g.nh + g.nl, g.rate, g.logged) then
      any = true
      if not g.ready then
        joining[nj + 1], nj = group, nj + 1
        g.ready, g.turns = true, 0
      end
    end
    local r = packGroup(g)
    if r == '' then
      goneGroups[ng + 1], ng = group, ng + 1
    else
      packed[np + 1], packed[np + 2], np = group, r, np + 2
    end
  end
  if np > 2 then sendChunks('HSET', KEY.groups(prefix), packed, np, 1000) end
  sendChunks('HDEL', KEY.groups(prefix), goneGroups, ng, 1000)
  sendChunks('RPUSH', KEY.rotation(prefix), joining, nj, 1000)
  return any
end
