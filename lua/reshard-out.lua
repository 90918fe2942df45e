--[[
  Takes jobs out of a queue shard whose queue's shard count is being changed (rota reshard, see
  src/queue/reshard.ts; executors are stopped): each job the caller names with its destination
  shard leaves its group's list or its set, its group's counters and the state counts (no event:
  its state does not change), and is listed in `moving` (see includes/reshard), from which the
  caller copies it to its destination (reshard-in.lua) before reshard-forget.lua deletes it here.
  Only one batch is out at a time: while `moving` holds jobs, nothing more is taken and they are
  answered instead. A listed id whose job is gone leaves its list or set, uncounted (as clean.lua
  drops such members).

  KEYS[1] counts   (every key is built from ARGV[1])
  ARGV[1] key prefix
  ARGV[2] what: 'pending' (answer what `moving` holds), 'close' (put back every list's jobs kept
          aside), 'lists' or a set ('delayed', 'waiting-children', 'done:success', 'done:failed',
          'done:cancelled')
  ARGV[3] for 'lists': one MessagePack array of strings, per group list: group, list ('h', 'l' or
          'r'), '1' to put its kept jobs back after this step (else '0'), the number n of jobs
          popped from its tail, then n pairs (job id, destination shard; '' for a job that
          stays), the tail's jobs in the order they are popped (the next to run first). The jobs
          that stay are kept aside in that order (includes/reshard). A list appears once a call.
          for a set: one MessagePack array of strings, pairs of job id, destination shard.

  Returns { RESHARD_OUT code, then per job in `moving`: id, destination, place, score }: the jobs
  taken out (`taken`), those `moving` held already with nothing taken (`pending`), or nothing
  with nothing taken (`changed`: a list's tail was not the jobs named).
]]
--- @include "includes/wire"
--- @include "includes/common"
--- @include "includes/changes"
--- @include "includes/groupChanges"
--- @include "includes/reshard"

local prefix = ARGV[1]
local what = ARGV[2]
local moving = KEY.moving(prefix)
-- a group list's letter -> the counter of its length in the group's record
local COUNTERS = { h = 'nh', l = 'nl', r = 'nr' }

-- The answer: a code, then the fields of each entry.
local reply = {}
local function answer(code, entries)
  reply[1] = code
  for _, movingEntry in ipairs(entries) do
    local id, dest, place, score = unpackEntry(movingEntry)
    reply[#reply + 1], reply[#reply + 2], reply[#reply + 3], reply[#reply + 4] = id, dest, place, score
  end
  return reply
end

if what == 'close' then
  for _, member in ipairs(call('SMEMBERS', KEY.reshardKept(prefix))) do
    closeKept(prefix, stringSub(member, 1, 1), stringSub(member, 2))
  end
  return answer(RESHARD_OUT.taken, EMPTY)
end
local held = call('LRANGE', moving, '0', '-1')
if what == 'pending' or #held > 0 then return answer(RESHARD_OUT.pending, held) end

local entries = {}
-- Takes job `id` (in `state`, of `group`) out to `dest`, from `place` (with `score` in a set).
local function takeOut(id, dest, place, score, state, group)
  entries[#entries + 1] = packEntry(id, dest, place, score)
  left(state)
  if state == 'stuck' then deferGroup(group, 'stuck', -1) end
end

local f = cmsgpack.unpack(ARGV[3])
if what == 'lists' then
  -- Every list's tail is checked before anything is taken.
  local starts = {}
  local i = 1
  while i <= #f do
    local list, n = f[i + 1], tonumber(f[i + 3])
    if not COUNTERS[list] then return redis.error_reply('ERR no group list "' .. tostring(list) .. '"') end
    local tail = call('LRANGE', KEY.groupList(prefix, f[i], list), str(-n), '-1')
    if #tail ~= n then return answer(RESHARD_OUT.changed, EMPTY) end
    for k = 1, n do
      if tail[n + 1 - k] ~= f[i + 2 + 2 * k] then return answer(RESHARD_OUT.changed, EMPTY) end
    end
    starts[#starts + 1] = i
    i = i + 4 + 2 * n
  end
  for _, at in ipairs(starts) do
    local group, list, close, n = f[at], f[at + 1], f[at + 2], tonumber(f[at + 3])
    local stay = {}
    call('LTRIM', KEY.groupList(prefix, group, list), '0', str(-n - 1))
    for k = 1, n do
      local id, dest = f[at + 2 + 2 * k], f[at + 3 + 2 * k]
      if dest == '' then
        stay[#stay + 1] = id
      else
        deferGroup(group, COUNTERS[list], -1)
        local state = call('HGET', KEY.job(prefix, id), 'state')
        if state then takeOut(id, dest, ':' .. list, '', state, group) end
      end
    end
    if #stay > 0 then
      -- (LPUSH in the order popped: the list aside keeps the jobs' order)
      sendChunks('LPUSH', KEY.keptAside(prefix, list, group), stay, #stay, 1000)
      if close ~= '1' then call('SADD', KEY.reshardKept(prefix), list .. group) end
    end
    if close == '1' then closeKept(prefix, list, group) end
  end
elseif jobSetKey(prefix, what) then
  local key = jobSetKey(prefix, what)
  local gone = {}
  for k = 1, #f, 2 do
    local id = f[k]
    local score = call('ZSCORE', key, id)
    if score then
      gone[#gone + 1] = id
      local job = call('HMGET', KEY.job(prefix, id), 'state', 'group')
      if job[1] then takeOut(id, f[k + 1], what, score, job[1], job[2]) end
    end
  end
  sendChunks('ZREM', key, gone, #gone, 1000)
else
  return redis.error_reply('ERR reshard-out: unknown what "' .. tostring(what) .. '"')
end
sendChunks('RPUSH', moving, entries, #entries, 1000)
flushGroups(prefix)
flushChanges(prefix, '0')
return answer(RESHARD_OUT.taken, entries)
