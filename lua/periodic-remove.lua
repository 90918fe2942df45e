--[[
  Removes periodic tasks (their definition, index entries and run history; their jobs stay in
  the queue until retention removes them).

  KEYS[1] p:nextrun  (every key is built from ARGV[1])
  ARGV[1] key prefix
  ARGV[2] 'ids' | 'owner'
  ARGV[3..] task ids, or one owner (all its tasks are removed)

  Returns the ids removed.
]]
--- @include "includes/periodic"

local prefix = ARGV[1]
local ids = {}
if ARGV[2] == 'owner' then
  ids = call('SMEMBERS', KEY.pOwner(prefix, ARGV[3]))
else
  for i = 3, #ARGV do ids[#ids + 1] = ARGV[i] end
end
local removed = {}
for _, id in ipairs(ids) do
  if pRemove(prefix, id) == 1 then removed[#removed + 1] = id end
end
if ARGV[2] == 'owner' then call('DEL', KEY.pOwner(prefix, ARGV[3])) end
return removed
