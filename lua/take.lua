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
    if group then
      redis.call('LPUSH', prefix .. 'g:' .. group .. ':r', id)
      updateGroup(prefix, group, { nr = 1 })
    end
  end
  redis.call('ZREM', prefix .. 'delayed', unpack(due))
end

local jobs = {}
local seq = tonumber(redis.call('GET', prefix .. 'seq') or '0')
while #jobs < n do
  local top = redis.call('ZRANGE', readyKey, 0, 0)
  local group = top[1]
  if not group then break end
  local gk = prefix .. 'g:' .. group
  local g = readGroup(gk)
  -- The list to take from: runnable stuck/released first, then the counting scheme's choice.
  local list
  if g.nr > 0 then
    list = 'nr'
  else
    local preferHigh = g.cnt < high
    if (preferHigh and g.nh > 0) or g.nl == 0 then list = 'nh' else list = 'nl' end
    g.cnt = (g.cnt + 1) % (high + low)
  end
  local id = g[list] > 0 and redis.call('RPOP', gk .. ':' .. string.sub(list, 2)) or false
  if not id then
    -- Counters and lists disagree (cannot happen through these scripts): resync and move on.
    redis.call('HSET', gk, 'nr', redis.call('LLEN', gk .. ':r'), 'nh', redis.call('LLEN', gk .. ':h'),
      'nl', redis.call('LLEN', gk .. ':l'))
    updateGroup(prefix, group, {})
  else
    g[list] = g[list] - 1
    local jobKey = prefix .. 'j:' .. id
    local job = redis.call('HGETALL', jobKey)
    local old
    for k = 1, #job, 2 do
      if job[k] == 'state' then old = job[k + 1]; break end
    end
    left(old)
    if old == 'stuck' then g.stuck = g.stuck - 1 end
    seq = seq + 1
    redis.call('HSET', jobKey, 'state', 'scheduled', 'worker', worker, 'takeSeq', seq)
    redis.call('ZADD', prefix .. 'active', now + lease, id)
    changed(id, 'scheduled')
    job[#job + 1] = 'takeSeq'; job[#job + 1] = tostring(seq)
    job[#job + 1] = 'worker'; job[#job + 1] = worker
    jobs[#jobs + 1] = job
    g.running = g.running + 1
    g.turns = g.turns + 1
    local fields = { 'running', g.running, 'cnt', g.cnt, 'stuck', g.stuck, list, g[list] }
    if not eligible(g) then
      redis.call('ZREM', readyKey, group)
      fields[#fields + 1] = 'ready'; fields[#fields + 1] = '0'
    elseif g.turns >= g.weight then
      redis.call('ZADD', readyKey, redis.call('INCR', prefix .. 'rr'), group)
      g.turns = 0
    end
    fields[#fields + 1] = 'turns'; fields[#fields + 1] = g.turns
    redis.call('HSET', gk, unpack(fields))
  end
end
if #jobs > 0 then redis.call('SET', prefix .. 'seq', seq) end

-- Someone else may take what is left: pass the wake-up on.
if #jobs == n and redis.call('ZCARD', readyKey) > 0 then wake(prefix) end
flushChanges(prefix, ARGV[2])
local nextDue = -1
local first = redis.call('ZRANGE', prefix .. 'delayed', 0, 0, 'WITHSCORES')
if first[2] then nextDue = tonumber(first[2]) end
return { jobs, nextDue }
