--[[
  One tick of the dashboard's shared reader (src/dashboard/reader.ts): everything its live pages
  show of a queue, read in one call, so that a dashboard sends one command a second per queue
  however many pages are open. Read only.

  KEYS[1] counts   (every key is built from ARGV[1])
  ARGV[1] key prefix
  ARGV[2] finished jobs are counted from after this time (ms); '' counts none
  ARGV[3] cursor of the sweep of the `groups` hash ('': no sweep this tick)
  ARGV[4] fields the sweep reads at most (HSCAN COUNT)
  ARGV[5] most executors listed
  ARGV[6] '1': also the server's memory and ops/s (INFO)
  ARGV[7] cursor of the oldest-wait sweep of the `groups` hash ('': none this tick)
  ARGV[8] fields that sweep reads at most (HSCAN COUNT)
  ARGV[9] '1': also the history of the current minute and of the one before (includes/history)
  ARGV[10] cursor of the sweep of the groups holding delayed or finished jobs ('': none this
          tick; see includes/heldScan)
  ARGV[11] members that sweep reads at most (ZSCAN COUNT)

  Returns { now (ms), counts as a flat list state, n, ...,
            { success, failed, cancelled: jobs finished after ARGV[2] },
            executors { id, registry expiry, info JSON, ... }, live executors,
            id of the newest events entry ('' none),
            next sweep cursor ('' when no sweep), { group, packed record, ... },
            { used_memory, instantaneous_ops_per_sec } or false,
            next oldest-wait sweep cursor ('' when none), { group, submitted time of its oldest
            waiting job (ms; 0: none), ... },
            { the `shards` and `reshard` fields of `meta` (false when absent): in the home shard,
              the queue's layout },
            { minute, the history hash of the minute before it (flat), of the minute } or false }
  Flagged no-writes: it runs while Redis refuses writes (maxmemory reached, a replica).
]]
--- @flags no-writes
--- @include "includes/common"
--- @include "includes/heldScan"

local prefix = ARGV[1]
local now = nowMs()
local nowText = str(now)
local counts = call('HGETALL', KEY.counts(prefix))

local finished = { 0, 0, 0 }
if ARGV[2] ~= '' then
  local finals = { 'success', 'failed', 'cancelled' }
  for i = 1, 3 do
    finished[i] = call('ZCOUNT', KEY.done(prefix, finals[i]), '(' .. ARGV[2], nowText)
  end
end

local executors = {}
local ids = call('ZRANGEBYSCORE', KEY.workers(prefix), nowText, '+inf', 'WITHSCORES', 'LIMIT', '0', ARGV[5])
for i = 1, #ids, 2 do
  local info = call('GET', KEY.worker(prefix, ids[i]))
  if info then
    executors[#executors + 1] = ids[i]
    executors[#executors + 1] = ids[i + 1]
    executors[#executors + 1] = info
  end
end
local live = call('ZCOUNT', KEY.workers(prefix), nowText, '+inf')

local newest = call('XREVRANGE', KEY.events(prefix), '+', '-', 'COUNT', '1')
local lastEvent = ''
if newest[1] then lastEvent = newest[1][1] end

local cursor, swept = '', EMPTY
if ARGV[3] ~= '' then
  local r = call('HSCAN', KEY.groups(prefix), ARGV[3], 'COUNT', ARGV[4])
  cursor, swept = r[1], r[2]
end

-- The oldest-wait sweep, a smaller step of its own (it reads up to six keys a group): each
-- group's oldest waiting job, the next of each of its lists, for the groups page's order.
local oldestCursor, oldest = '', {}
if ARGV[7] ~= '' then
  local r = call('HSCAN', KEY.groups(prefix), ARGV[7], 'COUNT', ARGV[8])
  oldestCursor = r[1]
  local fields = r[2]
  for i = 1, #fields, 2 do
    local name = fields[i]
    if name ~= '' then
      local first = 0
      for _, list in ipairs({ 'r', 'h', 'l' }) do
        local id = call('LINDEX', KEY.groupList(prefix, name, list), '-1')
        if id then
          local at = tonumber(call('HGET', KEY.job(prefix, id), 'submitted'))
          if at and (first == 0 or at < first) then first = at end
        end
      end
      oldest[#oldest + 1] = name
      oldest[#oldest + 1] = first
    end
  end
end

local server = false
if ARGV[6] == '1' then
  local memory = call('INFO', 'memory')
  local stats = call('INFO', 'stats')
  server = {
    string.match(memory, 'used_memory:(%d+)') or '0',
    string.match(stats, 'instantaneous_ops_per_sec:(%d+)') or '0',
  }
end

local layout = call('HMGET', KEY.meta(prefix), 'shards', 'reshard')

local history = false
if ARGV[9] == '1' then
  local minute = math.floor(now / 60000)
  history = { minute, call('HGETALL', KEY.historyMinute(prefix, str(minute - 1))), call('HGETALL', KEY.historyMinute(prefix, str(minute))) }
end

local heldCursor, held = '', EMPTY
if ARGV[10] ~= nil and ARGV[10] ~= '' then heldCursor, held = heldStep(prefix, ARGV[10], ARGV[11]) end

return { now, counts, finished, executors, live, lastEvent, cursor, swept, server, oldestCursor, oldest, layout, history,
  heldCursor, held }
