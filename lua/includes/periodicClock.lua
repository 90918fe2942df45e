--[[
  Backward jumps of the home shard's server clock, as the periodic scripts see them, and what they
  do to interval tasks (docs/operations.md, Time). An interval counts elapsed time, as systemd's
  monotonic timers do: when the clock goes back by D, an interval task's next occurrence, its
  staged occurrences and its grid move D earlier, so that it runs an interval after its last run
  (by a clock that did not jump) instead of going quiet for D. Calendar, cron and one-shot tasks
  keep their instants.
    p:clock  HASH  `hw`: the latest server time a claim saw; `epoch`: the backward jumps counted;
                   `shift`: their total (ms); `walk`: while interval tasks are being shifted, the
                   SSCAN cursor of p:all where the walk goes on
  A task's hash: `gs` its grid's shift (ms, subtracted from the timer's grid), `ss` the total
  `shift` it has taken in. Interval runs planned in epoch n > 0 have the id `<task id>@<occ>~<n>`:
  a shifted grid may meet instants that ran before the jump.
]]
--- @include "includes/common"
--- @export pClockCheck, pShift, pEpoch

-- A claim this much (ms) before the latest one is a backward jump (NTP slews stay far below it).
local JUMP_MS = 1000
-- Tasks of p:all a claim looks at per walk step.
local WALK_STEP = '200'

-- The epoch and total shift now (numbers).
local function pEpoch(prefix)
  local c = call('HMGET', KEY.pClock(prefix), 'epoch', 'shift')
  return tonumber(c[1]) or 0, tonumber(c[2]) or 0
end

-- Moves interval task `id` by what the queue's shift `shift` adds to what it took in: its nextrun
-- (hash and p:nextrun score, which ends any claim of it in flight), its staged occurrences'
-- release times and its grid. Idempotent: a task shifted already is left alone.
local function pShift(prefix, id, shift)
  local tk = KEY.pTask(prefix, id)
  local t = call('HMGET', tk, 'kind', 'ss', 'gs', 'nextrun', 'staged')
  if t[1] ~= 'interval' then return end
  local d = shift - (tonumber(t[2]) or 0)
  if d <= 0 then return end
  local fields = { 'ss', str(shift), 'gs', str((tonumber(t[3]) or 0) + d) }
  local nextrun = tonumber(t[4] or '')
  if nextrun then
    fields[#fields + 1] = 'nextrun'
    fields[#fields + 1] = str(nextrun - d)
    call('ZADD', KEY.pNextrun(prefix), 'XX', str(nextrun - d), id)
  end
  call('HSET', tk, unpack(fields))
  if t[5] and t[5] ~= '' then
    local staged = KEY.pStaged(prefix)
    for m in string.gmatch(t[5], '[^,]+') do
      local at = tonumber(call('ZSCORE', staged, m) or '')
      if at then call('ZADD', staged, 'XX', str(at - d), m) end
    end
  end
end

-- Called by every claim with the server's time `now`: counts a backward jump once (the claim that
-- first sees the time before the latest claim's, whichever replica sends it), and takes a step of
-- the walk that shifts every interval task. Answers the epoch, and whether the walk goes on.
local function pClockCheck(prefix, now)
  local key = KEY.pClock(prefix)
  local c = call('HMGET', key, 'hw', 'epoch', 'shift', 'walk')
  local hw, epoch, shift, walk = tonumber(c[1] or ''), tonumber(c[2]) or 0, tonumber(c[3]) or 0, c[4]
  if hw and now < hw - JUMP_MS then
    epoch, shift, walk = epoch + 1, shift + (hw - now), '0'
    call('HSET', key, 'hw', str(now), 'epoch', str(epoch), 'shift', str(shift), 'walk', walk)
  elseif not hw or now > hw then
    call('HSET', key, 'hw', str(now))
  end
  if walk then
    local step = call('SSCAN', KEY.pAll(prefix), walk, 'COUNT', WALK_STEP)
    for _, id in ipairs(step[2]) do pShift(prefix, id, shift) end
    if step[1] == '0' then
      call('HDEL', key, 'walk')
      walk = nil
    else
      call('HSET', key, 'walk', step[1])
    end
  end
  return epoch, walk ~= nil
end
