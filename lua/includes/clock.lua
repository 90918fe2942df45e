--[[
  Jumps of the server's clock, as a script notices them: the caller tells the server time it
  expects (its estimate from its own monotonic clock, src/redis/server-clock.ts) and how far off
  it may be. Either way, what it bounds is measured in the longest lease of the executors
  registered (at most CLOCK_MAX_HOLD_MS):
  - a forward jump sets `clock-jump` for that long: meanwhile no lease and no registry entry
    counts as expired (every live executor beats within a third of its lease, and renews its
    leases from the new time);
  - a backward jump brings the leases set before it back to at most that long from the new time,
    and the registry entries to three times that (their time to live), so that a dead executor's
    runs are recovered a lease after the jump, not the jump plus a lease.
]]
--- @include "includes/common"
--- @export clockCheck, clockJumped

-- Leases and registry entries brought back per call at most (the next executor to notice the
-- jump brings back more).
local CLOCK_BATCH = '10000'
-- Longest hold after a forward jump (ms), whatever the leases.
local CLOCK_MAX_HOLD_MS = 600000

-- Brings the members of ZSET `key` scored after `cap` back to `cap` (the pad, at +inf, stays).
local function capScores(key, cap)
  local members = call('ZRANGEBYSCORE', key, '(' .. str(cap), '(+inf', 'LIMIT', '0', CLOCK_BATCH)
  for _, member in ipairs(members) do call('ZADD', key, 'XX', str(cap), member) end
end

-- The longest lease (ms) of the registered executors and `lease` (the caller's own), from the
-- registry entry expiring last, read against `expected` (the server's time had it not jumped): an
-- entry's time to live is three leases, renewed every third of one, so what is left of it is at
-- least two leases and at most three. (Their `w:<id>` info is no help: a jump expires it.)
local function longestLease(prefix, expected, lease)
  local last = call('ZRANGE', KEY.workers(prefix), '-1', '-1', 'WITHSCORES')
  local remaining = last[2] and tonumber(last[2]) - expected or 0
  return math.min(math.max(lease, math.floor(remaining / 2)), CLOCK_MAX_HOLD_MS)
end

-- Compares the server's time `now` with what the caller expected (`expectAt`, '' for nothing,
-- within `tolerance` ms), and bounds what a jump does (see above); `lease`: the caller's (ms).
local function clockCheck(prefix, now, expectAt, tolerance, lease)
  local expected = tonumber(expectAt)
  if not expected then return end
  local drift = now - expected
  tolerance = tonumber(tolerance)
  if drift > tolerance then
    call('SET', KEY.clockJump(prefix), str(now), 'PX', str(longestLease(prefix, expected, lease)))
  elseif drift < -tolerance then
    local longest = longestLease(prefix, expected, lease)
    capScores(KEY.leases(prefix), now + longest)
    capScores(KEY.workers(prefix), now + 3 * longest)
  end
end

-- Whether the server's clock jumped forward within the last lease (leases do not expire then).
local function clockJumped(prefix)
  return call('EXISTS', KEY.clockJump(prefix)) == 1
end
