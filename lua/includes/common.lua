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
    events       STREAM one entry per script call that changed jobs: a field per state entered
                       without an error, named after the state, = [job id...]; field b =
                       [[job id, state, error]...] for changes with an error (stuck, failed);
                       field p = [[job id, periodic task id, occurrence, error]...] for failed
                       periodic runs (periodic.failed)
    g:<group>    HASH  running, stuck, paused, limit, weight, cnt (counting scheme position),
                       turns (takes in the current turn), nh/nl/nr (lengths of the three lists),
                       ready ('1' while the group is in `ready`)
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

-- The decimal string of a number, for command arguments (Redis formats a Lua number with
-- printf on every use); the last one is kept, since a script passes the same time many times.
local lastNumber, lastString
local function str(n)
  if n ~= lastNumber then
    lastNumber, lastString = n, tostring(n)
  end
  return lastString
end

-- HMGET of a job's state and `...`, or nil when there is no submitted job under `jobKey` (a
-- planned job, a periodic occurrence staged ahead, is not submitted yet).
local function submittedJob(jobKey, ...)
  local job = redis.call('HMGET', jobKey, 'state', ...)
  if not job[1] or job[1] == 'planned' then return nil end
  return job
end

-- The table kept under `key` in `map`, created (and `key` appended to `order`) on first use: the
-- collections a script fills as it goes and writes out once, in first-seen order.
local function slot(map, order, key)
  local t = map[key]
  if not t then
    t = {}
    map[key] = t
    order[#order + 1] = key
  end
  return t
end

-- Collected state changes of one script call; flushed as one stream entry: the ids per state
-- (in the order states first occur), and the changes that carry an error.
local stateIds, stateOrder = {}, {}
local events = {}
local countDelta = {}

local function changed(id, state, err)
  if err then
    events[#events + 1] = { id, state, err }
  else
    local ids = slot(stateIds, stateOrder, state)
    ids[#ids + 1] = id
  end
  countDelta[state] = (countDelta[state] or 0) + 1
end

local function left(state)
  countDelta[state] = (countDelta[state] or 0) - 1
end

-- Failed runs of periodic tasks in this call: { job id, task id, occurrence, error }; flushed in
-- the same stream entry as field 'p' (periodic.failed events users can alert on).
local periodicFailures = {}

local function periodicFailed(id, tracker, occurrence, err)
  periodicFailures[#periodicFailures + 1] = { id, tracker, tonumber(occurrence) or false, err or false }
end

local function flushChanges(prefix, maxEvents)
  for state, d in pairs(countDelta) do
    if d ~= 0 then redis.call('HINCRBY', prefix .. 'counts', state, d) end
  end
  if tonumber(maxEvents) <= 0 or (#stateOrder == 0 and #events == 0) then return end
  local fields = { 'XADD', prefix .. 'events', 'MAXLEN', '~', maxEvents, '*' }
  for _, state in ipairs(stateOrder) do
    fields[#fields + 1] = state
    fields[#fields + 1] = cjson.encode(stateIds[state])
  end
  if #events > 0 then
    fields[#fields + 1] = 'b'
    fields[#fields + 1] = cjson.encode(events)
  end
  if #periodicFailures > 0 then
    fields[#fields + 1] = 'p'
    fields[#fields + 1] = cjson.encode(periodicFailures)
  end
  redis.call(unpack(fields))
end

-- The group settings and counters every script reads, in this order.
local GROUP_FIELDS = { 'paused', 'limit', 'running', 'nr', 'nh', 'nl', 'ready', 'weight', 'turns', 'cnt', 'stuck' }

local function readGroup(gk)
  local v = redis.call('HMGET', gk, unpack(GROUP_FIELDS))
  return {
    paused = v[1] == '1', limit = tonumber(v[2] or '0') or 0, running = tonumber(v[3] or '0') or 0,
    nr = tonumber(v[4] or '0') or 0, nh = tonumber(v[5] or '0') or 0, nl = tonumber(v[6] or '0') or 0,
    ready = v[7] == '1', weight = tonumber(v[8] or '1') or 1, turns = tonumber(v[9] or '0') or 0,
    cnt = tonumber(v[10] or '0') or 0, stuck = tonumber(v[11] or '0') or 0,
    known = (v[1] or v[2] or v[4] or v[5] or v[6] or v[8]) and true or false,
  }
end

-- Whether a group may be picked now: not paused, under its limit, with runnable jobs.
local function eligible(g)
  return not g.paused and (g.limit == 0 or g.running < g.limit) and (g.nr + g.nh + g.nl) > 0
end

-- The one way a group changes: applies `delta` (field -> increment) to its counters, then puts
-- the group in the rotation (at the back) when it may be picked and is not there, or takes it
-- out when it may not. Returns true when the group is in the rotation afterwards.
local function updateGroup(prefix, group, delta)
  local gk = prefix .. 'g:' .. group
  -- Only the running count changes (runs ended) and the group has no limit: whether it may be
  -- picked cannot change, so the count is all there is to write.
  local first = next(delta)
  if first == 'running' and next(delta, first) == nil then
    local v = redis.call('HMGET', gk, 'limit', 'ready')
    if v[2] and (not v[1] or v[1] == '' or v[1] == '0') then
      if delta.running ~= 0 then redis.call('HINCRBY', gk, 'running', delta.running) end
      return v[2] == '1'
    end
  end
  local g = readGroup(gk)
  if not g.known then redis.call('SADD', prefix .. 'groups', group) end
  local out = {}
  for field, d in pairs(delta) do
    g[field] = g[field] + d
    out[#out + 1] = field
    out[#out + 1] = g[field]
  end
  local now = eligible(g)
  if now and not g.ready then
    redis.call('ZADD', prefix .. 'ready', redis.call('INCR', prefix .. 'rr'), group)
    out[#out + 1] = 'ready'; out[#out + 1] = '1'
    out[#out + 1] = 'turns'; out[#out + 1] = 0
  elseif g.ready and not now then
    redis.call('ZREM', prefix .. 'ready', group)
    out[#out + 1] = 'ready'; out[#out + 1] = '0'
  end
  if #out > 0 then redis.call('HSET', gk, unpack(out)) end
  return now
end

-- Group changes collected during one script call and applied once per group, in first-seen
-- order, by flushGroups (for batches: a hundred finished jobs of one group cost one update).
local pendingGroups, pendingOrder = {}, {}

local function deferGroup(group, delta)
  local d = slot(pendingGroups, pendingOrder, group)
  for field, v in pairs(delta) do d[field] = (d[field] or 0) + v end
end

-- Returns true when any of the updated groups is in the rotation afterwards.
local function flushGroups(prefix)
  local any = false
  for _, group in ipairs(pendingOrder) do
    if updateGroup(prefix, group, pendingGroups[group]) then any = true end
  end
  pendingGroups, pendingOrder = {}, {}
  return any
end

-- Sorted-set writes collected during one script call and sent as one command per key (in
-- chunks), by flushLater.
local laterAdds, laterRems, laterKeys = {}, {}, {}

local function laterZadd(key, score, member)
  local a = laterAdds[key]
  if not a then a = {}; laterAdds[key] = a; laterKeys[#laterKeys + 1] = key end
  a[#a + 1] = score
  a[#a + 1] = member
end

local function laterZrem(key, member)
  local a = laterRems[key]
  if not a then a = {}; laterRems[key] = a; laterKeys[#laterKeys + 1] = key end
  a[#a + 1] = member
end

local function flushLater()
  for _, key in ipairs(laterKeys) do
    local r = laterRems[key]
    if r then
      for i = 1, #r, 500 do redis.call('ZREM', key, unpack(r, i, math.min(#r, i + 499))) end
    end
    local a = laterAdds[key]
    if a then
      for i = 1, #a, 1000 do redis.call('ZADD', key, unpack(a, i, math.min(#a, i + 999))) end
    end
  end
  laterAdds, laterRems, laterKeys = {}, {}, {}
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
  local doomed = {}
  for _, id in ipairs(ids) do
    doomed[#doomed + 1] = prefix .. 'j:' .. id
    doomed[#doomed + 1] = prefix .. 'j:' .. id .. ':logs'
  end
  if #doomed > 0 then redis.call('DEL', unpack(doomed)) end
  redis.call('ZREMRANGEBYRANK', key, 0, excess - 1)
  countDelta[state] = (countDelta[state] or 0) - #ids
end
