--[[
  The keys a job owns that go with its hash, named in one place for every call that removes jobs
  (delete, clean, the keep count and the keep age): its hash, its log lines, its attempts and, for
  a flow's parent with children in other queues, the ends delivered from them (`xd:<id>`, written
  by includes/children's cross.deliver). `xp` marks a shard where such an end was ever delivered
  (set by the first, never removed), so that where none was, no DEL names a key never there.
]]
--- @include "includes/common"
--- @export markCrossDelivered, crossDeliveredHere, addJobKeys

-- Marks the shard of `prefix` as holding delivered ends (called by each new delivery record).
local function markCrossDelivered(prefix)
  call('SET', KEY.crossParents(prefix), '1')
end

-- Whether a parent of the shard of `prefix` may hold delivered ends: read once by a call that
-- removes jobs, and given to addJobKeys as `crossed`.
local function crossDeliveredHere(prefix)
  return call('EXISTS', KEY.crossParents(prefix)) == 1
end

-- Appends to list `into` the keys that go with the hashes of the jobs of list `ids` (each hash
-- first); answers `into`.
local function addJobKeys(into, prefix, ids, crossed)
  local n = #into
  for i = 1, #ids do
    local id = ids[i]
    into[n + 1], into[n + 2], into[n + 3] = KEY.job(prefix, id), KEY.logs(prefix, id), KEY.attempts(prefix, id)
    n = n + 3
    if crossed then
      n = n + 1
      into[n] = KEY.crossDelivered(prefix, id)
    end
  end
  return into
end
