--[[
  Sorted-set writes collected during one script call and sent as one command per key (in
  chunks) by flushLater.
]]
--- @include "includes/common"
--- @export laterAdds, laterRems, laterList, flushLater

-- The lists per key are kept across calls and emptied as they are sent; a key is listed in
-- laterKeys when its list gets its first entry of the call.
local laterAdds, laterRems = {}, {}
local laterKeys = {}

-- The list of writes to `key` in `map`, to append to: in laterAdds score, member pairs (ZADD), in
-- laterRems members (ZREM).
local function laterList(map, key)
  return callList(map, laterKeys, key)
end

-- Sends (unless `drop`) and empties the collected writes.
local function flushLater(drop)
  for i = 1, #laterKeys do
    local key = laterKeys[i]
    local r, a = laterRems[key], laterAdds[key]
    if r and r[1] then
      if not drop then sendChunks('ZREM', key, r, #r, 500) end
      clearList(r)
    end
    if a and a[1] then
      if not drop then sendChunks('ZADD', key, a, #a, 1000) end
      clearList(a)
    end
  end
  clearList(laterKeys)
end

-- (a call that wrote nothing later, as most scripts' calls, costs a look at laterKeys alone)
onBeginCall(function()
  if laterKeys[1] then flushLater(true) end
end)
