--[[
  A scheduler replica claims up to ARGV[3] tasks due by now + ARGV[2] (the look-ahead that lets
  it compute next occurrences before they are due). A claim moves the task's p:nextrun score to
  now + ARGV[4] (the claim's TTL); that score is the claim token the fire script compares. A
  replica that dies holding claims blocks nothing: at the TTL the tasks are due again and any
  replica claims them. Stale index entries (task gone) are dropped.

  KEYS[1] p:nextrun  (every key is built from ARGV[1])
  ARGV[1] key prefix
  ARGV[2] look-ahead (ms)
  ARGV[3] most tasks to claim
  ARGV[4] claim TTL (ms), more than the look-ahead
  ARGV[5] now (ms) given by an injected clock, or '' for the server clock

  Returns { now, earliest score left after the claims ('' when none),
            per claimed task: id, token, nextrun, timer, timezone, catchup, catchupWindow, buffered, triggered }.
]]
local prefix = ARGV[1]
local now
if ARGV[5] ~= '' then
  now = tonumber(ARGV[5])
else
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local token = now + tonumber(ARGV[4])
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now + tonumber(ARGV[2]), 'LIMIT', 0, tonumber(ARGV[3]))
local out = {}
for _, id in ipairs(due) do
  local t = redis.call('HMGET', prefix .. 'p:t:' .. id, 'nextrun', 'timer', 'timezone', 'catchup', 'catchupWindow', 'buffered', 'triggered')
  if not t[2] then
    redis.call('ZREM', KEYS[1], id)
  else
    redis.call('ZADD', KEYS[1], token, id)
    out[#out + 1] = id
    out[#out + 1] = token
    for i = 1, 7 do out[#out + 1] = t[i] or '' end
  end
end
local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
return { now, first[2] or '', out }
