--[[
  A queue shard while its queue's shard count changes (rota reshard, src/queue/reshard.ts): the
  jobs taken out of it and not yet forgotten are listed in `moving`, one entry each (packEntry):
  the job id, its destination shard, its place here (`:h`, `:l`, `:r`: its group's list;
  `delayed`, `done:<state>`: that set) and its score in that set ('' for a list). Their hashes and
  logs stay here until reshard-forget.lua deletes them with the list, once reshard-in.lua has
  copied them to their destination.

  The jobs that stay, popped from a group list to reach the ones behind them that leave, are set
  aside in `rk:<list>:<group>` (the list's letter) in their order, and the list is named in
  `reshard:kept` (`<letter><group>`) until they are put back at its tail (closeKept).
]]
--- @include "includes/common"
--- @export packEntry, unpackEntry, jobSetKey, closeKept

-- The entry of a job in `moving`, and the fields of one.
local function packEntry(id, dest, place, score)
  return cmsgpack.pack(id, dest, place, score)
end

local function unpackEntry(movingEntry)
  return cmsgpack.unpack(movingEntry)
end

-- The key of job set `name` as src/redis/reshard-store.ts names the sets (`delayed`,
-- `waiting-children`, `done:<state>`), nil for any other name.
local FINAL_SETS = { ['done:success'] = 'success', ['done:failed'] = 'failed', ['done:cancelled'] = 'cancelled' }
local function jobSetKey(prefix, name)
  if name == 'delayed' then return KEY.delayed(prefix) end
  if name == 'waiting-children' then return KEY.waitingChildren(prefix) end
  local state = FINAL_SETS[name]
  return state and KEY.done(prefix, state)
end

-- Puts the jobs kept aside from a group's list back at its tail (they came from there, the
-- tail-most first, so the list ends as it was but for the jobs that left), and forgets the list
-- in `reshard:kept`.
local function closeKept(prefix, list, group)
  local key, kept = KEY.groupList(prefix, group, list), KEY.keptAside(prefix, list, group)
  if call('EXISTS', kept) == 1 then
    if call('EXISTS', key) == 0 then
      call('RENAME', kept, key)
    else
      local ids = call('LRANGE', kept, '0', '-1')
      sendChunks('RPUSH', key, ids, #ids, 1000)
      call('DEL', kept)
    end
  end
  call('SREM', KEY.reshardKept(prefix), list .. group)
end
