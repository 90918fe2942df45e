--[[
  The autoscaling gauges' read of one shard (src/observability/metrics.ts), one call a scrape:
  the job counts, a step of the sweep of the `groups` hash (the waiting jobs an autoscaler must
  not count, and the oldest runnable wait), what `delayed` holds due soon, and the live
  executors' info. Read only.

  KEYS[1] counts   (every key is built from ARGV[1])
  ARGV[1] key prefix
  ARGV[2] cursor of the sweep of the `groups` hash ('0' starts a round)
  ARGV[3] fields of `groups` this call reads about at most (HSCAN steps of up to 500 until the
          round ends)
  ARGV[4] most executors listed
  ARGV[5] the due window (ms): `delayed` entries due up to now + this are counted

  A swept group is held when it is not paused and has jobs but no executor may start one now: it
  is at its concurrency limit, or parked at its rate (its `\0<group>` entry in `delayed` is not
  due yet). Runnable: not paused and not held.

  Returns { now (ms), counts as a flat list state, n, ..., next sweep cursor ('0': the round
            ended), { paused waiting, held waiting, oldest runnable start (ms; 0: none) } of the
            groups swept, entries of `delayed` due by now + ARGV[5] that are jobs (parked groups'
            entries of the swept groups taken off), { executor id, info JSON, ... } }
  Flagged no-writes: it runs while Redis refuses writes (maxmemory reached, a replica).
]]
--- @flags no-writes
--- @include "includes/common"
--- @include "includes/groupRecord"

local prefix = ARGV[1]
local budget = num(ARGV[3])
local step = str(math.min(500, budget))
local now = nowMs()
local nowText = str(now)
local dueBy = now + num(ARGV[5])
local delayedKey = prefix .. 'delayed'
local counts = call('HGETALL', prefix .. 'counts')

-- When the next run of a waiting job may start: its submit, its due time once delayed, or its
-- retry's due time once stuck (ms; nil: no such job).
local function startOf(id)
  local f = call('HMGET', prefix .. 'j:' .. id, 'submitted', 'runAt', 'due')
  local at = tonumber(f[1])
  if not at then return nil end
  local runAt, due = tonumber(f[2]), tonumber(f[3])
  if runAt and runAt > at then at = runAt end
  if due and due > at then at = due end
  return at
end

local cursor, read = ARGV[2], 0
local paused, held, oldest, parkedDue = 0, 0, 0, 0
repeat
  local r = call('HSCAN', prefix .. 'groups', cursor, 'COUNT', step)
  cursor = r[1]
  local fields = r[2]
  read = read + #fields / 2
  for i = 1, #fields, 2 do
    local name = fields[i]
    if name ~= '' then
      local running, stuck, nr, nh, nl, _, _, limit, _, isPaused, _, rate, _, logged = decodeGroup(fields[i + 1])
      local waiting = nh + nl + math.max(0, nr - stuck)
      if isPaused == 1 then
        paused = paused + waiting
      elseif nr + nh + nl > 0 then
        local full = limit > 0 and running >= limit
        if rate > 0 and logged >= rate then
          local at = tonumber(call('ZSCORE', delayedKey, '\0' .. name))
          if at and at > now then full = true end
          if at and at <= dueBy then parkedDue = parkedDue + 1 end
        end
        if full then
          held = held + waiting
        else
          -- (the oldest job of each of its lists that holds any: its tail)
          local lists = prefix .. 'g:' .. name
          for list, n in pairs({ [':r'] = nr, [':h'] = nh, [':l'] = nl }) do
            if n > 0 then
              local id = call('LINDEX', lists .. list, '-1')
              local at = id and startOf(id)
              if at and (oldest == 0 or at < oldest) then oldest = at end
            end
          end
        end
      end
    end
  end
until cursor == '0' or read >= budget

local due = call('ZCOUNT', delayedKey, '-inf', str(dueBy)) - parkedDue

local executors = {}
local ids = call('ZRANGEBYSCORE', prefix .. 'workers', nowText, '+inf', 'LIMIT', '0', ARGV[4])
for i = 1, #ids do
  local info = call('GET', prefix .. 'w:' .. ids[i])
  if info then
    executors[#executors + 1] = ids[i]
    executors[#executors + 1] = info
  end
end

return { now, counts, cursor, { paused, held, oldest }, due, executors }
