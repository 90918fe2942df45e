--[[
  A page of the dashboard's job list (src/dashboard/): the jobs of one state, optionally of one
  group and one task, newest first for finished jobs, in take order for waiting ones, in submit
  order for those waiting for children (their index, includes/waitIndex). Candidates
  (the ids of the set or lists that hold the state) are read a chunk at a time from a position,
  and the call stops once the page is full, it has looked at the most candidates it may, or it
  sent as many commands; no call reads a whole set, and none passes over candidates one by one
  to reach its position: sorted sets are entered by rank, a group's lists by their lengths, the
  groups by an HSCAN cursor. The next page goes on from the position it answers. Read only.

  KEYS[1] counts   (every key is built from ARGV[1])
  ARGV[1] key prefix
  ARGV[2] state
  ARGV[3] group ('' any)
  ARGV[4] task ('' any)
  ARGV[5] position of the first candidate: a whole number (at most 15 digits), or for the waiting
          jobs of every group `cursor-index-offset`; '' (or anything else) the first page
  ARGV[6] page size
  ARGV[7] most candidates looked at, and most commands sent to walk the groups
  ARGV[8..] the job hash fields answered per job: state, group and d (the packed description)
            first, as the filter reads them, then any others

  Delayed and stuck jobs come in due order from `delayed`, which also holds groups parked at
  their rate (members beginning with GROUP_DUE_MARK): those are passed over unread.

  Returns { 1 when the state can be listed, else 0, the jobs as a flat list (per job: id, its
            candidate position, then the hash fields of ARGV[8..]), position of the next
            candidate, 1 when candidates are left, candidates looked at, commands sent }
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
local size, most = tonumber(ARGV[6]), tonumber(ARGV[7])
local CHUNK = 200
-- Groups a call to HSCAN asks for, and most groups one call enters (its lists read or measured).
local SCAN_COUNT = '100'
local JOB_FIELDS = {}
for i = 8, #ARGV do JOB_FIELDS[#JOB_FIELDS + 1] = ARGV[i] end

-- Commands sent: the call's work, answered so that a test can check its bound.
local calls = 0
local function read(...)
  calls = calls + 1
  return call(...)
end

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

-- A position ARGV[5] names: a whole number of at most 15 digits, or for the waiting jobs of every
-- group `cursor-index-offset` (see everyGroup); anything else is the first page's.
local function wholeAt(text)
  if text and string.match(text, '^%d%d?%d?%d?%d?%d?%d?%d?%d?%d?%d?%d?%d?%d?%d?$') then return tonumber(text) end
  return 0
end

-- A source of candidates: next() gives the next candidate's member and its position (nil when
-- none is left); at() the position of the candidate next() would give.

-- The members of a sorted set by rank (reversed: highest score first) from rank `from`: a page
-- that starts deep passes over the members before it by rank, unread.
local function zsetSource(key, reversed, from)
  local cmd = reversed and 'ZREVRANGE' or 'ZRANGE'
  local part, i, base = EMPTY, 1, from
  local done = false
  local s = {}
  function s.next()
    if i > #part then
      if done then return nil end
      base = base + #part
      part, i = read(cmd, key, str(base), str(base + CHUNK - 1)), 1
      if #part < CHUNK then done = true end
      if #part == 0 then return nil end
    end
    local member = part[i]
    i = i + 1
    return member, str(base + i - 2)
  end
  function s.at() return str(base + i - 1) end
  return s
end

-- The waiting jobs of one group in take order (its preferred list, then high, then low, each
-- from its tail) from position `from` among them: the lists wholly before it are passed over by
-- their lengths, and the one it falls in is read from its offset.
local function groupSource(name, from)
  local lists = { 'r', 'h', 'l' }
  local li, offset, pos = 1, from, from
  local part, i = EMPTY, 1
  local key
  local s = {}
  -- (moves to the list that holds position `pos`, or past the last)
  local function settle()
    while li <= #lists and not key do
      local k = KEY.groupList(prefix, name, lists[li])
      local n = read('LLEN', k)
      if offset < n then key = k else offset, li = offset - n, li + 1 end
    end
  end
  function s.next()
    while true do
      if i <= #part then
        local id = part[i]
        i, pos = i + 1, pos + 1
        return id, pos - 1
      end
      settle()
      if not key then return nil end
      local chunk = read('LRANGE', key, str(-(offset + CHUNK)), str(-(offset + 1)))
      if #chunk == 0 then
        key, offset, li = nil, 0, li + 1
      else
        part, i = {}, 1
        for k = #chunk, 1, -1 do part[#part + 1] = chunk[k] end
        offset = offset + #chunk
        if #chunk < CHUNK then key, offset, li = nil, 0, li + 1 end
      end
    end
  end
  function s.at() return pos end
  return s
end

-- The waiting jobs of every group, a group after the other in the order of HSCAN over the
-- `groups` hash. A position is `cursor-index-offset`: the HSCAN cursor of a batch of names, the
-- name's index in that batch and the position among the group's jobs; a deep page starts there
-- at the cost of one HSCAN, so no call passes over groups it does not show. (A batch read again
-- after groups came or went may differ: a page may then pass over or repeat a few groups.)
-- No group is entered once the call sent `most` commands: a page over many groups with nothing
-- waiting stops there, and the next page goes on from the group it did not enter.
local function everyGroup(from)
  local c, k, o = string.match(from or '', '^(%d+)%-(%d+)%-(%d+)$')
  -- (a cursor of 19 digits at most, as HSCAN takes; an index and an offset of 15)
  if not c or #c > 19 or #k > 15 or #o > 15 then c, k, o = '0', '0', '0' end
  local cursor, index, offset = c, tonumber(k), tonumber(o)
  local names, nextCursor = {}, nil
  local inner
  local s = {}
  local function batch()
    local r = read('HSCAN', KEY.groups(prefix), cursor, 'COUNT', SCAN_COUNT)
    nextCursor, names = r[1], {}
    for j = 1, #r[2], 2 do names[#names + 1] = r[2][j] end
  end
  batch()
  -- Whether no group is left after this batch.
  local function last() return nextCursor == '0' end
  function s.next()
    while true do
      if inner then
        local id, p = inner.next()
        if id then
          offset = p + 1
          return id, cursor .. '-' .. index .. '-' .. p
        end
        inner, index, offset = nil, index + 1, 0
      end
      if index >= #names then
        if last() then return nil end
        if calls >= most then return nil, true end
        cursor, index, offset = nextCursor, 0, 0
        batch()
      elseif calls >= most then
        return nil, true
      elseif names[index + 1] == '' then
        index, offset = index + 1, 0
      else
        inner = groupSource(names[index + 1], offset)
      end
    end
  end
  function s.at() return cursor .. '-' .. index .. '-' .. offset end
  return s
end

local source
-- How a candidate's member names its job (nil: not a job, passed over).
local idOf = function(member)
  if string.sub(member, 1, 1) == GROUP_DUE_MARK then return nil end
  return member
end
if state == 'success' or state == 'failed' or state == 'cancelled' then
  source = zsetSource(KEY.done(prefix, state), true, wholeAt(ARGV[5]))
elseif state == 'stuck' or state == 'delayed' then
  source = zsetSource(KEY.delayed(prefix), false, wholeAt(ARGV[5]))
elseif state == 'waiting-children' then
  source = zsetSource(KEY.waitingChildren(prefix), false, wholeAt(ARGV[5]))
elseif state == 'scheduled' or state == 'running' then
  source = zsetSource(KEY.leases(prefix), false, wholeAt(ARGV[5]))
  idOf = leaseJobId
elseif state == 'waiting' then
  if group ~= '' then
    -- (its positions as text, as every source's)
    local g = groupSource(group, wholeAt(ARGV[5]))
    source = {
      next = function()
        local id, p = g.next()
        if id then return id, str(p) end
        return nil
      end,
      at = function() return str(g.at()) end,
    }
  else
    source = everyGroup(ARGV[5])
  end
else
  return { 0, EMPTY, '', 0, 0, calls }
end

local out, found, looked = {}, 0, 0
local remaining = true
while found < size and looked < most do
  local member, pos = source.next()
  if not member then
    -- (a source that stopped at its bound of commands says so: candidates are left)
    remaining = pos == true
    break
  end
  looked = looked + 1
  local id = idOf(member)
  local job = EMPTY
  if id then job = read('HMGET', KEY.job(prefix, id), unpack(JOB_FIELDS)) end
  if job[1] == state and (group == '' or job[2] == group) and (task == '' or taskOf(job[3]) == task) then
    found = found + 1
    out[#out + 1] = id
    out[#out + 1] = pos
    for k = 1, #JOB_FIELDS do out[#out + 1] = job[k] or '' end
  end
end
-- (a page that stopped full or at its bound of candidates: whether one is left)
local nextAt = source.at()
if remaining and (found >= size or looked >= most) then
  local peek, bounded = source.next()
  remaining = peek ~= nil or bounded == true
end
return { 1, out, nextAt, remaining and 1 or 0, looked, calls }
