--[[
  A page of the dashboard's job list (src/dashboard/): the jobs of one state, optionally of one
  group and one task, newest first for finished jobs, in take order for waiting ones. Candidates
  (the ids of the set or lists that hold the state) are read a chunk at a time from a position,
  and the call stops once the page is full or it has looked at the most candidates it may, so
  no call reads a whole set; the next page goes on from the position it answers. Read only.

  KEYS[1] counts   (every key is built from ARGV[1])
  ARGV[1] key prefix
  ARGV[2] state
  ARGV[3] group ('' any)
  ARGV[4] task ('' any)
  ARGV[5] position of the first candidate (candidates before it are passed over unread)
  ARGV[6] page size
  ARGV[7] most candidates looked at
  ARGV[8..] the job hash fields answered per job: state, group and d (the packed description)
            first, as the filter reads them, then any others

  Delayed and stuck jobs come in due order from `delayed`, which also holds groups parked at
  their rate (members beginning with GROUP_DUE_MARK): those are passed over unread.

  Returns { 1 when the state can be listed, else 0, the jobs as a flat list (per job: id, its
            candidate position, then the hash fields of ARGV[8..]), position after the last
            candidate looked at, 1 when candidates are left }
  (A job's position lets a page merged from several shards go on from the first job of a shard
  that it did not show.)
  Flagged no-writes: it runs while Redis refuses writes (maxmemory reached, a replica).
]]
--- @flags no-writes
--- @include "includes/wire"
--- @include "includes/common"
--- @include "includes/leases"

local prefix = ARGV[1]
local state, group, task = ARGV[2], ARGV[3], ARGV[4]
local start, size, most = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])
local CHUNK = 200
local JOB_FIELDS = {}
for i = 8, #ARGV do JOB_FIELDS[#JOB_FIELDS + 1] = ARGV[i] end

-- The task of a packed description (its first element, a MessagePack string), or nil.
local function taskOf(d)
  if not d then return nil end
  local at = 2
  local b = string.byte(d, 1)
  if b == 0xdc then at = 4 elseif b == 0xdd then at = 6 end
  local h = string.byte(d, at)
  if not h then return nil end
  if h >= 0xa0 and h <= 0xbf then return string.sub(d, at + 1, at + h - 0xa0) end
  if h == 0xd9 then
    local n = string.byte(d, at + 1)
    return string.sub(d, at + 2, at + 1 + n)
  end
  if h == 0xda then
    local n = string.byte(d, at + 1) * 256 + string.byte(d, at + 2)
    return string.sub(d, at + 3, at + 2 + n)
  end
  return nil
end

-- An iterator of chunks of a sorted set's members by rank (reversed: highest score first), from
-- rank `from`.
local function zsetChunks(key, reversed, from)
  local at = from
  return function()
    local cmd = reversed and 'ZREVRANGE' or 'ZRANGE'
    local part = call(cmd, key, str(at), str(at + CHUNK - 1))
    at = at + CHUNK
    if #part == 0 then return nil end
    return part
  end
end

-- An iterator of chunks of a list's entries from its tail (the next to be popped first).
local function listChunks(key)
  local at = 0
  return function()
    local part = call('LRANGE', key, str(-(at + CHUNK)), str(-(at + 1)))
    if #part == 0 then return nil end
    at = at + CHUNK
    local out = {}
    for i = #part, 1, -1 do out[#out + 1] = part[i] end
    return out
  end
end

-- The chunks of several iterators, one after the other; `more()` gives the next iterator or nil.
local function chained(more)
  local current = more()
  return function()
    while current do
      local part = current()
      if part then return part end
      current = more()
    end
    return nil
  end
end

-- The waiting jobs of one group, in take order: its preferred list, then high, then low.
local function groupLists(name)
  local lists, i = { ':r', ':h', ':l' }, 0
  return chained(function()
    i = i + 1
    if lists[i] then return listChunks(prefix .. 'g:' .. name .. lists[i]) end
    return nil
  end)
end

-- The waiting jobs of every group, a group after the other in the order of the `groups` hash.
local function everyGroup()
  local cursor, names, i = '0', {}, 0
  local started = false
  return chained(function()
    while true do
      i = i + 1
      if names[i] then
        if names[i] ~= '' then return groupLists(names[i]) end
      else
        if started and cursor == '0' then return nil end
        started = true
        local r = call('HSCAN', prefix .. 'groups', cursor, 'COUNT', '100')
        cursor, names, i = r[1], {}, 0
        for k = 1, #r[2], 2 do names[#names + 1] = r[2][k] end
      end
    end
  end)
end

local chunks
-- Candidates passed over by rank already (sorted sets); the others are passed over as read.
local skipped = 0
if state == 'success' or state == 'failed' or state == 'cancelled' then
  chunks = zsetChunks(prefix .. 'done:' .. state, true, start)
  skipped = start
elseif state == 'stuck' or state == 'delayed' then
  chunks = zsetChunks(prefix .. 'delayed', false, start)
  skipped = start
elseif state == 'scheduled' or state == 'running' then
  local leased = zsetChunks(prefix .. 'leases', false, 0)
  chunks = function()
    local part = leased()
    if not part then return nil end
    local ids = {}
    for _, member in ipairs(part) do
      local id = leaseJobId(member)
      if id then ids[#ids + 1] = id end
    end
    return ids
  end
elseif state == 'waiting' then
  if group ~= '' then chunks = groupLists(group) else chunks = everyGroup() end
else
  return { 0, EMPTY, 0, 0 }
end

-- The next candidate's chunk and place in it (nil: none is left).
local part, at = chunks(), 1
local function settle()
  while part and at > #part do part, at = chunks(), 1 end
end

-- Candidates before `start` that the chunks did not pass over are passed over unread.
settle()
while part and skipped < start do
  local n = math.min(#part - at + 1, start - skipped)
  skipped, at = skipped + n, at + n
  settle()
end

local out, found, looked = {}, 0, 0
while part and found < size and looked < most do
  local id = part[at]
  local pos = start + looked
  at, looked = at + 1, looked + 1
  local job = EMPTY
  if string.sub(id, 1, 1) ~= GROUP_DUE_MARK then job = call('HMGET', prefix .. 'j:' .. id, unpack(JOB_FIELDS)) end
  if job[1] == state and (group == '' or job[2] == group) and (task == '' or taskOf(job[3]) == task) then
    found = found + 1
    out[#out + 1] = id
    out[#out + 1] = pos
    for k = 1, #JOB_FIELDS do out[#out + 1] = job[k] or '' end
  end
  settle()
end
return { 1, out, start + looked, part and 1 or 0 }
