--[[
  A step of the autoscaling gauges' sweep of one shard's `groups` hash
  (src/observability/metrics-sweep.ts): one HSCAN of ARGV[3] fields, and of the groups it
  returns the waiting jobs an autoscaler must not count and the oldest runnable wait. A sweep
  calls it step after step, so no call holds Redis for more than a step's groups. Read only.

  KEYS[1] groups   (every key is built from ARGV[1])
  ARGV[1] key prefix
  ARGV[2] cursor of the sweep ('0' starts a round)
  ARGV[3] fields the step reads (HSCAN COUNT)
  ARGV[4] the due window (ms), as metrics-shard.lua's

  A swept group is held when it is not paused and has jobs but no executor may start one now: it
  is at its concurrency limit, or parked at its rate (its `\0<group>` entry in `delayed` is not
  due yet). Runnable: not paused and not held. Each runnable group costs the tail of each of its
  lists that holds jobs and that job's times (2 commands a list).

  Returns { next cursor ('0': the round ended), fields read, { paused waiting, held waiting,
            oldest runnable start (ms; 0: none), entries in `delayed` of the swept groups parked
            at their rate due by now + ARGV[4] } }
  Flagged no-writes: it runs while Redis refuses writes (maxmemory reached, a replica).
]]
--- @flags no-writes
--- @include "includes/common"
--- @include "includes/groupRecord"

local prefix = ARGV[1]
local now = nowMs()
local dueBy = now + num(ARGV[4])
local delayedKey = KEY.delayed(prefix)

-- When the next run of a waiting job may start: its submit, its due time once delayed, or its
-- retry's due time once stuck (ms; nil: no such job).
local function startOf(id)
  local f = call('HMGET', KEY.job(prefix, id), 'submitted', 'runAt', 'due')
  local at = tonumber(f[1])
  if not at then return nil end
  local runAt, due = tonumber(f[2]), tonumber(f[3])
  if runAt and runAt > at then at = runAt end
  if due and due > at then at = due end
  return at
end

local r = call('HSCAN', KEY.groups(prefix), ARGV[2], 'COUNT', ARGV[3])
local fields = r[2]
local paused, held, oldest, parkedDue = 0, 0, 0, 0
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
        for list, n in pairs({ r = nr, h = nh, l = nl }) do
          if n > 0 then
            local id = call('LINDEX', KEY.groupList(prefix, name, list), '-1')
            local at = id and startOf(id)
            if at and (oldest == 0 or at < oldest) then oldest = at end
          end
        end
      end
    end
  end
end

return { r[1], #fields / 2, { paused, held, oldest, parkedDue } }
