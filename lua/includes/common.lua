--[[
  Shared helpers for Rota's scripts. Every key of a queue starts with one prefix
  `{rota:<queue>}:` (ARGV[1] in every script), so a queue lives in one Redis Cluster slot.

  Key layout below the prefix:
    ready        ZSET  group -> turn number; groups that may be picked now (round-robin order)
    rr           STRING turn counter for `ready`
    seq          STRING take sequence (takeSeq; also the lease token)
    marker       ZSET  wake-up marker that idle executors block on (BZPOPMIN)
    delayed      ZSET  stuck job id -> due time (ms)
    active       ZSET  taken job id -> lease expiry (ms)
    counts       HASH  state -> number of jobs
    groups       SET   every group ever seen
    events       STREAM batches of state changes
    g:<group>    HASH  running, stuck, paused, limit, weight, cnt (counting scheme), turns
    g:<group>:h  LIST  waiting high-priority job ids (LPUSH in, RPOP out)
    g:<group>:l  LIST  waiting low-priority job ids
    g:<group>:r  LIST  runnable stuck or released job ids, preferred inside the group
    j:<id>       HASH  the job
    j:<id>:logs  LIST  log lines of the job's runs
    done:<state> ZSET  finished job id -> finished time, per final state
    workers      ZSET  executor id -> registry expiry; w:<id> HASH executor info
]]

local function nowMs()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- Collected state changes of one script call; flushed as one stream entry.
local events = {}
local countDelta = {}

local function changed(id, state, err)
  events[#events + 1] = { id, state, err or false }
  countDelta[state] = (countDelta[state] or 0) + 1
end

local function left(state)
  countDelta[state] = (countDelta[state] or 0) - 1
end

local function flushChanges(prefix, maxEvents)
  for state, d in pairs(countDelta) do
    if d ~= 0 then redis.call('HINCRBY', prefix .. 'counts', state, d) end
  end
  if #events > 0 and tonumber(maxEvents) > 0 then
    redis.call('XADD', prefix .. 'events', 'MAXLEN', '~', maxEvents, '*', 'b', cjson.encode(events))
  end
end

-- Puts the group in the rotation when it may be picked, takes it out when not.
-- Returns true when the group is in the rotation afterwards.
local function refreshGroup(prefix, group)
  local gk = prefix .. 'g:' .. group
  local meta = redis.call('HMGET', gk, 'paused', 'limit', 'running')
  local eligible = meta[1] ~= '1'
  if eligible then
    local limit = tonumber(meta[2] or '0') or 0
    if limit > 0 and (tonumber(meta[3] or '0') or 0) >= limit then eligible = false end
  end
  if eligible then
    eligible = redis.call('LLEN', gk .. ':r') > 0 or redis.call('LLEN', gk .. ':h') > 0
      or redis.call('LLEN', gk .. ':l') > 0
  end
  if eligible then
    if not redis.call('ZSCORE', prefix .. 'ready', group) then
      redis.call('ZADD', prefix .. 'ready', redis.call('INCR', prefix .. 'rr'), group)
      redis.call('HSET', gk, 'turns', 0)
    end
    return true
  end
  redis.call('ZREM', prefix .. 'ready', group)
  return false
end

local function wake(prefix)
  redis.call('ZADD', prefix .. 'marker', 0, 'w')
end

-- Trims a finished-state set to `keep` jobs, removing at most 200 per call.
local function trimFinished(prefix, state, keep)
  keep = tonumber(keep)
  if keep < 0 then return end
  local key = prefix .. 'done:' .. state
  local excess = redis.call('ZCARD', key) - keep
  if excess <= 0 then return end
  if excess > 200 then excess = 200 end
  local ids = redis.call('ZRANGE', key, 0, excess - 1)
  for _, id in ipairs(ids) do
    redis.call('DEL', prefix .. 'j:' .. id, prefix .. 'j:' .. id .. ':logs')
  end
  redis.call('ZREMRANGEBYRANK', key, 0, excess - 1)
  countDelta[state] = (countDelta[state] or 0) - #ids
end
