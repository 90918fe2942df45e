--[[
  Takes up to N jobs for one executor, fairly: groups are picked round-robin from the shared
  rotation (a weight-w group keeps the turn for w takes); inside a group a runnable stuck job
  comes first, then the counting scheme (h, l) picks high or low priority, falling back to the
  other when one is empty; FIFO inside a priority. Due stuck jobs are promoted first.
  Each taken job is marked `scheduled` with the executor id, gets a lease in `active`, and its
  take sequence number (takeSeq), which is also the lease token.

  KEYS[1] ready    (every key is built from ARGV[1])
  ARGV[1] key prefix
  ARGV[2] events stream max length
  ARGV[3] executor id
  ARGV[4] N, most jobs to take
  ARGV[5] counting scheme: high count
  ARGV[6] counting scheme: low count
  ARGV[7] lease (ms)

  Returns { jobs, next stuck due time (ms) or -1 }, where jobs is a list of HGETALL arrays.
]]
--- @include "includes/common"

local prefix = ARGV[1]
local worker = ARGV[3]
local n = tonumber(ARGV[4])
local high = tonumber(ARGV[5])
local low = tonumber(ARGV[6])
local lease = tonumber(ARGV[7])
local now = nowMs()
local readyKey = prefix .. 'ready'

-- Promote stuck jobs whose retry time has come into their group's preferred list.
local due = redis.call('ZRANGEBYSCORE', prefix .. 'delayed', '-inf', now, 'LIMIT', 0, 1000)
if #due > 0 then
  for _, id in ipairs(due) do
    local group = redis.call('HGET', prefix .. 'j:' .. id, 'group')
    if group and redis.call('LPUSH', prefix .. 'g:' .. group .. ':r', id) == 1 then
      refreshGroup(prefix, group)
    end
  end
  redis.call('ZREM', prefix .. 'delayed', unpack(due))
end

local jobs = {}
while #jobs < n do
  local top = redis.call('ZRANGE', readyKey, 0, 0)
  local group = top[1]
  if not group then break end
  local gk = prefix .. 'g:' .. group
  local meta = redis.call('HMGET', gk, 'weight', 'turns', 'cnt', 'limit', 'running')
  local weight = tonumber(meta[1] or '1') or 1
  local turns = tonumber(meta[2] or '0') or 0
  local cnt = tonumber(meta[3] or '0') or 0
  local limit = tonumber(meta[4] or '0') or 0
  local running = (tonumber(meta[5] or '0') or 0) + 1

  local id = redis.call('RPOP', gk .. ':r')
  if not id then
    local first, second = ':h', ':l'
    if cnt >= high then first, second = ':l', ':h' end
    id = redis.call('RPOP', gk .. first)
    if not id then id = redis.call('RPOP', gk .. second) end
    cnt = (cnt + 1) % (high + low)
  end

  if id then
    local jobKey = prefix .. 'j:' .. id
    local old = redis.call('HGET', jobKey, 'state')
    left(old)
    if old == 'stuck' then redis.call('HINCRBY', gk, 'stuck', -1) end
    local seq = redis.call('INCR', prefix .. 'seq')
    redis.call('HSET', jobKey, 'state', 'scheduled', 'worker', worker, 'takeSeq', seq, 'taken', now)
    redis.call('ZADD', prefix .. 'active', now + lease, id)
    changed(id, 'scheduled')
    jobs[#jobs + 1] = redis.call('HGETALL', jobKey)
    turns = turns + 1
    redis.call('HSET', gk, 'running', running, 'cnt', cnt, 'turns', turns)
    local more = limit == 0 or running < limit
    if more then
      more = redis.call('LLEN', gk .. ':r') > 0 or redis.call('LLEN', gk .. ':h') > 0
        or redis.call('LLEN', gk .. ':l') > 0
    end
    if not more then
      redis.call('ZREM', readyKey, group)
    elseif turns >= weight then
      redis.call('ZADD', readyKey, redis.call('INCR', prefix .. 'rr'), group)
      redis.call('HSET', gk, 'turns', 0)
    end
  elseif refreshGroup(prefix, group) then
    break
  end
end

-- Someone else may take what is left: pass the wake-up on.
if #jobs == n and redis.call('ZCARD', readyKey) > 0 then wake(prefix) end
flushChanges(prefix, ARGV[2])
local nextDue = -1
local first = redis.call('ZRANGE', prefix .. 'delayed', 0, 0, 'WITHSCORES')
if first[2] then nextDue = tonumber(first[2]) end
return { jobs, nextDue }
