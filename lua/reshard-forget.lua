--[[
  Forgets the jobs a shard took out (reshard-out.lua) once the caller has copied them to their
  destinations (reshard-in.lua), while the queue's shard count changes (rota reshard): deletes
  their hashes, logs and the dedup keys they hold here, and empties `moving` (see includes/reshard). Nothing is done unless
  `moving` holds exactly the jobs named, in their order (another reshard of the queue may have
  forgotten them and taken others out meanwhile).

  KEYS[1] counts   (every key is built from ARGV[1])
  ARGV[1] key prefix
  ARGV[2] the ids of the jobs copied, in their order in `moving`: one MessagePack array of strings

  Returns the number of jobs forgotten, or -1 when `moving` held other jobs (nothing was done).
]]
--- @include "includes/common"
--- @include "includes/reshard"
--- @include "includes/dedup"

local prefix = ARGV[1]
local moving = KEY.moving(prefix)
local ids = cmsgpack.unpack(ARGV[2])
local entries = call('LRANGE', moving, '0', '-1')
if #entries ~= #ids then return -1 end
local keys = {}
for k, movingEntry in ipairs(entries) do
  local id = unpackEntry(movingEntry)
  if id ~= ids[k] then return -1 end
  local jobKey = KEY.job(prefix, id)
  keys[#keys + 1], keys[#keys + 2], keys[#keys + 3] = jobKey, KEY.logs(prefix, id), KEY.attempts(prefix, id)
end
for k = 1, #ids do releaseDedupOf(prefix, ids[k], false) end
for k = 1, #keys, 1000 do call('DEL', unpack(keys, k, math.min(#keys, k + 999))) end
call('DEL', moving)
return #entries
