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
--- @export packEntry, unpackEntry, keptKey, closeKept

-- The entry of a job in `moving`, and the fields of one.
local function packEntry(id, dest, place, score)
  return cmsgpack.pack(id, dest, place, score)
end

local function unpackEntry(movingEntry)
  return cmsgpack.unpack(movingEntry)
end

-- The list that keeps aside the staying jobs of list `list` ('h', 'l' or 'r') of `group`.
local function keptKey(prefix, list, group)
  return prefix .. 'rk:' .. list .. ':' .. group
end

-- Puts the jobs kept aside from a group's list back at its tail (they came from there, the
-- tail-most first, so the list ends as it was but for the jobs that left), and forgets the list
-- in `reshard:kept`.
local function closeKept(prefix, list, group)
  local key, kept = prefix .. 'g:' .. group .. ':' .. list, keptKey(prefix, list, group)
  if call('EXISTS', kept) == 1 then
    if call('EXISTS', key) == 0 then
      call('RENAME', kept, key)
    else
      local ids = call('LRANGE', kept, '0', '-1')
      sendChunks('RPUSH', key, ids, #ids, 1000)
      call('DEL', kept)
    end
  end
  call('SREM', prefix .. 'reshard:kept', list .. group)
end
