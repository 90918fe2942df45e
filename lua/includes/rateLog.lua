--[[
  A group's rate limit (at most `rate` starts in any `per` ms, fields of its record): its rate log
  `g:<group>:rl`, a sorted set of its recent starts (member: the take sequence number of the job
  taken, score: the take's time), which its record counts (`logged`). The log is exact: a start
  at `now` is allowed while fewer than `rate` of the logged starts are later than now - per.
  Starts no longer in the window are trimmed when the limit may bind (the log holds `rate` or
  close to it), so a group far from its rate costs one write a take. A group at its rate leaves
  the rotation and is parked in `delayed` (member GROUP_DUE_MARK .. group) until its window
  frees; the take's promoteDue brings it back (see includes/take).
]]
--- @include "includes/wire"
--- @include "includes/common"
--- @export rateLogKey, trimRateLog, logRateStarts, parkRated, dropRateLog

-- The key of a group's rate log.
local function rateLogKey(prefix, group)
  return KEY.rateLog(prefix, group)
end

-- Trims the starts that left the window (at `now`) from a group's log. Returns how many it removed.
local function trimRateLog(prefix, group, per, now)
  return call('ZREMRANGEBYSCORE', rateLogKey(prefix, group), '-inf', str(now - per))
end

-- The ZADD arguments of logRateStarts (reused: the library keeps it across calls).
local rateStarts = {}

-- Logs `n` starts at `now`: the jobs of take sequence numbers first .. first + n - 1.
local function logRateStarts(prefix, group, now, first, n)
  local at = str(now)
  for j = 1, n do
    rateStarts[2 * j - 1], rateStarts[2 * j] = at, string.format('%d', first + j - 1)
  end
  for i = #rateStarts, 2 * n + 1, -1 do rateStarts[i] = nil end
  sendChunks('ZADD', rateLogKey(prefix, group), rateStarts, 2 * n, 1000)
end

-- Parks a group whose log holds `count` (>= rate) starts in the window: until the start that
-- must leave the window for one more to fit has left it.
local function parkRated(prefix, group, rate, per, count)
  local at = call('ZRANGE', rateLogKey(prefix, group), str(count - rate), str(count - rate), 'WITHSCORES')
  local free = (tonumber(at[2]) or 0) + per
  call('ZADD', KEY.delayed(prefix), str(free), GROUP_DUE_MARK .. group)
end

-- Removes a group's rate log and its place in `delayed` (its rate was lifted).
local function dropRateLog(prefix, group)
  call('DEL', rateLogKey(prefix, group))
  call('ZREM', KEY.delayed(prefix), GROUP_DUE_MARK .. group)
end
