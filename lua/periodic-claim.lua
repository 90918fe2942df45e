--[[
  A scheduler replica claims up to ARGV[3] tasks due by now + ARGV[2] (the look-ahead that lets
  it compute next occurrences before they are due). A claim moves the task's p:nextrun score to
  now + ARGV[4] (the claim's TTL); that score is the claim token periodic-stage compares. A
  replica that dies holding claims blocks nothing: at the TTL the tasks are due again and any
  replica claims them. Any change to a task (upsert, enable, disable, trigger, remove) rewrites
  or removes its score, so a valid token also means the task's timer is as the claim read it.
  Stale index entries (task gone) are dropped. The claimed tasks' run histories are trimmed here,
  ahead of their occurrences. On the server's clock, a claim also watches it for backward jumps
  and takes a step of the shift of interval tasks after one (includes/periodicClock).

  KEYS[1] p:nextrun  (every key is built from ARGV[1])
  ARGV[1] key prefix
  ARGV[2] look-ahead (ms)
  ARGV[3] most tasks to claim
  ARGV[4] claim TTL (ms), more than the look-ahead
  ARGV[5] now (ms) given by an injected clock, or '' for the server clock
  ARGV[6] run history: entries kept per task (-1: all)
  ARGV[7] run history: age kept (ms, -1: forever)
  ARGV[8] misfire grace (ms): a claim this long after the last claim or release begins a new run (pLive)

  Returns { now, earliest score left after the claims ('' when none), earliest p:staged score
            ('' when none), per claimed task: id, token, then the CLAIM_FIELDS (src/redis/wire.ts),
            the clock's epoch (backward jumps counted), 1 while interval tasks are still being
            moved back after a backward jump (claim again at once), else 0, when the claims'
            current unbroken run began (pLive) }. Besides
  what the scheduler needs to plan, they hold what periodic-stage needs to stage the jobs, so
  that it does not read the task again: a valid token also means none of them changed since
  (only periodic-stage itself writes period, and only with the token). The reply holds args
  (msgpack), so read it binary-safe.
]]
--- @include "includes/wire"
--- @include "includes/periodic"
--- @include "includes/periodicClock"

local prefix = ARGV[1]
local now
if ARGV[5] ~= '' then
  now = tonumber(ARGV[5])
else
  local t = call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local epoch, walking
if ARGV[5] == '' then
  epoch, walking = pClockCheck(prefix, now)
else
  epoch, walking = pEpoch(prefix), false
end
local _, shift = pEpoch(prefix)
local since = pLive(prefix, now, tonumber(ARGV[8]))
local token = now + tonumber(ARGV[4])
local due = call('ZRANGEBYSCORE', KEYS[1], '-inf', now + tonumber(ARGV[2]), 'LIMIT', 0, tonumber(ARGV[3]))
local out = {}
local claims = {}
for _, id in ipairs(due) do
  -- (an interval task due before the walk after a backward jump reached it is shifted first)
  if shift > 0 then pShift(prefix, id, shift) end
  local t = call('HMGET', KEY.pTask(prefix, id), unpack(CLAIM_FIELDS))
  if not t[2] then
    call('ZREM', KEYS[1], id)
  else
    claims[#claims + 1] = token
    claims[#claims + 1] = id
    out[#out + 1] = id
    out[#out + 1] = token
    for i = 1, #CLAIM_FIELDS do out[#out + 1] = t[i] or '' end
    pTrimHistory(prefix, id, ARGV[6], ARGV[7], now)
  end
end
for i = 1, #claims, 1000 do call('ZADD', KEYS[1], unpack(claims, i, math.min(#claims, i + 999))) end
local first = call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
local staged = call('ZRANGE', KEY.pStaged(prefix), 0, 0, 'WITHSCORES')
return { now, first[2] or '', staged[2] or '', out, epoch, walking and 1 or 0, since }
