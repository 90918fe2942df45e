--[[
  Shared helpers for Rota's scripts. Every key of a queue starts with one prefix
  `{rota:<queue>}:` (ARGV[1] in every script), so a queue lives in one Redis Cluster slot.

  Key layout below the prefix:
    rotation     LIST  the round-robin rotation: group names, the next to be served first (a take
                       pops groups from the front and pushes back those still runnable: to the
                       back when their turn ended, to the front when it did not). A group that
                       stops being runnable outside a take stays listed until a take pops it
                       and drops it (so no call searches the list); its `ready` flag says it is
                       listed, so it is never listed twice.
    seq          STRING take sequence (takeSeq; also the lease token)
    marker       ZSET  wake-up marker that idle executors block on (BZPOPMIN)
    delayed      ZSET  stuck job id -> due time (ms)
    leases       ZSET  the runs in progress (jobs taken and not finished), one member each: its
                       lease token, a mark of its condition and its job id (leaseMember: ':' while
                       the job is scheduled, '!' once it runs, '?' once its cancel was requested)
                       -> lease expiry (ms). The scripts that change a taken job's state or cancel
                       flag change its member with it, so a member names a run exactly as the job
                       hash does: a finish removes the members its runs claim and, when all were
                       there, needs no read of the job hashes (see finish.lua). And a pad member
                       (LEASES_PAD) that keeps the set a skiplist
    counts       HASH  state -> number of jobs
    groups       HASH  group -> its packed state (see GROUP_FIELDS): running (taken, not finished;
                       counted only while the group has a limit, see countsRunning), stuck,
                       nr/nh/nl (lengths of its three lists), cnt (counting scheme position), turns
                       (takes in the current turn), limit, weight, paused, ready (1 while listed
                       in `rotation`); only groups with jobs, settings of their own or a place
                       in `rotation` (see storeGroups); and a pad field (the empty name, see
                       GROUPS_PAD) that keeps the hash a table
    limited      SET   the groups with a concurrency limit (group.lua keeps it)
    events       STREAM one entry per script call that changed jobs: a field per state entered
                       without an error, named after the state, = JSON [job id, ...]; field
                       b = JSON list of [job id, state, error] for changes with an error (stuck,
                       failed); field p = JSON list of [job id, periodic task id, occurrence,
                       error] for failed periodic runs (periodic.failed)
    g:<group>:h  LIST  waiting high-priority job ids (LPUSH in, RPOP out)
    g:<group>:l  LIST  waiting low-priority job ids
    g:<group>:r  LIST  runnable stuck or released job ids, preferred inside the group
    j:<id>       HASH  the job: d (its packed description, see includes/addJob), copies of the
                       fields hot paths read (group; tracker, occurrence of a periodic run),
                       state, submitted, retries, worker, takeSeq, started, finished, due,
                       result, error, cancel, progress
    j:<id>:logs  LIST  log lines of the job's runs
    done:<state> ZSET  finished job id -> finished time, per final state
    workers      ZSET  executor id -> registry expiry; w:<id> HASH executor info
]]

-- Redis's functions the scripts use most, in locals (an upvalue is reached for less than a
-- field of a global table); set as each call begins, since a library cannot reach them while
-- it loads.
local call, structPack, structUnpack

-- The number a numeric argument stands for. tonumber of a string costs some 1,000 instructions
-- (strtod); the arguments that are settings (take size, lease, keep counts, counting scheme) come
-- again call after call, so their numbers are kept (at most 256 strings, then kept afresh) and
-- found for a tenth of that.
local numbers, numbersKept = {}, 0
local function num(s)
  local n = numbers[s]
  if n then return n end
  n = tonumber(s)
  if numbersKept == 256 then numbers, numbersKept = {}, 0 end
  numbers[s], numbersKept = n, numbersKept + 1
  return n
end

-- The server's time (ms). Its seconds change once a second: their number is kept with their text.
local lastSeconds, lastSecondsMs
local function nowMs()
  local t = call('TIME')
  if t[1] ~= lastSeconds then lastSeconds, lastSecondsMs = t[1], tonumber(t[1]) * 1000 end
  return lastSecondsMs + math.floor(tonumber(t[2]) / 1000)
end

-- The decimal string of integer n, for command arguments. Redis turns a Lua number argument into
-- text with snprintf("%.17g"), some 2,000 instructions a number; a string goes as it is. So every
-- number a script passes goes through here (constants are written as strings): small ones come
-- from a table the library keeps (filled as they occur), the last other one is kept (a script
-- passes the same time many times), and the rest are formatted as integers, which costs half of
-- "%.17g".
local smallInts = {}
local lastNumber, lastString
local function str(n)
  local s = smallInts[n]
  if s then return s end
  if n ~= lastNumber then
    lastNumber, lastString = n, string.format('%d', n)
    if n >= -1000 and n <= 1000 then smallInts[n] = lastString end
  end
  return lastString
end

-- HMGET of a job's state and `...`, or nil when there is no submitted job under `jobKey` (a
-- planned job, a periodic occurrence staged ahead, is not submitted yet).
local function submittedJob(jobKey, ...)
  local job = call('HMGET', jobKey, 'state', ...)
  if not job[1] or job[1] == 'planned' then return nil end
  return job
end

-- The priority ('high'|'low') and retry limit of a job, from its description `d` (see
-- includes/addJob), a MessagePack array: only its first four elements are decoded (one byte in,
-- past the array's header), never the args, which may hold types the Lua decoder does not know.
local function describeJob(d)
  local _, _, _, priority, maxRetries = cmsgpack.unpack_limit(d, 4, 1)
  return priority, maxRetries
end

-- Empties list `t` in place (its storage is kept for the next call).
local function clearList(t)
  for i = #t, 1, -1 do t[i] = nil end
end

-- The list kept under `key` in `map` across calls (created on first use), with `key` appended to
-- `order` when the list gets its first entry of this call: the collections a script fills as it
-- goes, writes out in first-use order, and empties in place (clearList) for the next call.
local function callList(map, order, key)
  local t = map[key]
  if not t then
    t = {}
    map[key] = t
  end
  if t[1] == nil then order[#order + 1] = key end
  return t
end

-- Collected state changes of one script call; flushed as one stream entry: the ids per state
-- (in the order states first occur), and the changes that carry an error. The lists per state
-- and the count changes are kept across calls and emptied in place by beginCall (a state's
-- list is in this call's order once it holds an id). A state's count grows by the ids its list
-- holds when the changes are flushed, and by the changes with an error as they come.
local stateIds, stateOrder = {}, {}
local events = {}
local countDelta = {}

-- The list of ids that entered `state` in this call, for a caller about to add one or more
-- (a state listed with no id would be an empty field of the stream entry).
local function changedList(state)
  return callList(stateIds, stateOrder, state)
end

local function changed(id, state, err)
  if err then
    events[#events + 1] = { id, state, err }
    countDelta[state] = (countDelta[state] or 0) + 1
    return
  end
  -- (changedList's lookup, written out: two calls a change cost a finished job 2% more)
  local ids = stateIds[state]
  if not ids then
    ids = {}
    stateIds[state] = ids
  end
  local n = #ids
  if n == 0 then stateOrder[#stateOrder + 1] = state end
  ids[n + 1] = id
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

-- The XADD argument list of flushChanges (reused: the library keeps it across calls).
local entry = { 'XADD', false, 'MAXLEN', '~', false, '*' }

local function flushChanges(prefix, maxEvents)
  for i = 1, #stateOrder do
    local state = stateOrder[i]
    countDelta[state] = (countDelta[state] or 0) + #stateIds[state]
  end
  for state, d in pairs(countDelta) do
    if d ~= 0 then call('HINCRBY', prefix .. 'counts', state, str(d)) end
  end
  if num(maxEvents) <= 0 or (#stateOrder == 0 and #events == 0) then return end
  local a, n = entry, 6
  a[2], a[5] = prefix .. 'events', maxEvents
  for _, state in ipairs(stateOrder) do
    a[n + 1], a[n + 2], n = state, cjson.encode(stateIds[state]), n + 2
  end
  if #events > 0 then
    a[n + 1], a[n + 2], n = 'b', cjson.encode(events), n + 2
  end
  if #periodicFailures > 0 then
    a[n + 1], a[n + 2], n = 'p', cjson.encode(periodicFailures), n + 2
  end
  call(unpack(a, 1, n))
end

-- A group's state is one packed value in the `groups` hash: the counters and settings below, in
-- this order, as little-endian 32-bit integers (GROUP_FORMAT). One HMGET reads the groups a
-- script visits and one HSET writes them back, however many there are.
local GROUP_FIELDS = { 'running', 'stuck', 'nr', 'nh', 'nl', 'cnt', 'turns', 'limit', 'weight', 'paused', 'ready' }
local GROUP_FORMAT = '<i4i4i4i4i4i4i4i4i4i4i4'

-- The tables group states are unpacked into are reused: the library keeps up to POOLED_GROUPS
-- of them across calls and a call hands them out in turn (beginCall starts over), which spares
-- a new table, and its keys, for every group a call visits.
local POOLED_GROUPS = 2000
local groupPool, groupPoolNext = {}, 1

local function unpackGroup(v)
  local g = groupPool[groupPoolNext]
  if not g then
    g = {}
    if groupPoolNext <= POOLED_GROUPS then groupPool[groupPoolNext] = g end
  end
  groupPoolNext = groupPoolNext + 1
  if not v then
    g.running, g.stuck, g.nr, g.nh, g.nl, g.cnt, g.turns, g.limit, g.weight, g.paused, g.ready =
      0, 0, 0, 0, 0, 0, 0, 0, 1, false, false
    return g
  end
  local running, stuck, nr, nh, nl, cnt, turns, limit, weight, paused, ready = structUnpack(GROUP_FORMAT, v)
  g.running, g.stuck, g.nr, g.nh, g.nl, g.cnt, g.turns, g.limit, g.weight, g.paused, g.ready =
    running, stuck, nr, nh, nl, cnt, turns, limit, weight, paused == 1, ready == 1
  return g
end

-- The packed states of names[i] on, a thousand at most (one HMGET), and the index of the last read.
local function readGroups(prefix, names, i)
  local last = math.min(#names, i + 999)
  return call('HMGET', prefix .. 'groups', unpack(names, i, last)), last
end

-- The state of each group in `names` (one HMGET per thousand), added to `map` by name (a group
-- `map` holds already keeps what it holds).
local function loadGroups(prefix, names, map)
  for i = 1, #names, 1000 do
    local v, last = readGroups(prefix, names, i)
    for k = i, last do
      local name = names[k]
      if not map[name] then map[name] = unpackGroup(v[k - i + 1]) end
    end
  end
  return map
end

-- Whether a group may be picked now: not paused, under its limit (0: none), with runnable jobs
-- (`jobs`: the lengths of its lists together). Fields as its record holds them (paused 0|1).
local function eligibleState(paused, limit, running, jobs)
  return paused == 0 and (limit == 0 or running < limit) and jobs > 0
end

-- Whether a group holds nothing worth storing: no jobs waiting or stuck, the default settings
-- (so no limit, and no running count: see countsRunning), and no place in `rotation` (listed
-- false). Its state is then what unpackGroup gives for a group not in the hash: its counting
-- scheme starts a new cycle with its next jobs (the ratio matters only while jobs wait).
local function idleState(stuck, jobs, limit, weight, paused, listed)
  return stuck == 0 and jobs == 0 and limit == 0 and weight == 1 and paused == 0 and not listed
end

-- A group's record (GROUP_FORMAT) from its fields, listed in the rotation or not; '' for a group
-- with nothing of its own (idleState), to remove from the hash.
local function groupRecord(running, stuck, nr, nh, nl, cnt, turns, limit, weight, paused, listed)
  if idleState(stuck, nr + nh + nl, limit, weight, paused, listed) then return '' end
  return structPack(GROUP_FORMAT, running, stuck, nr, nh, nl, cnt, turns, limit, weight, paused, listed and 1 or 0)
end

-- A group's running jobs are counted (g.running) only while it has a concurrency limit, the one
-- thing the count decides: a take from a limited group adds one, and the end of a run of a group
-- in `limited` takes one off, so that the end of a run of any other group touches no group state.
-- Setting a limit counts the group's runs in `leases` (runningByGroup), lifting it zeroes the
-- count: both in the same atomic call that changes `limited`, so every run is counted once.
-- Whether `limited` exists is read once per call (most queues have no limits).
local anyLimited
local function hasLimits(prefix)
  if anyLimited == nil then anyLimited = call('EXISTS', prefix .. 'limited') == 1 end
  return anyLimited
end

local function countsRunning(prefix, group)
  return hasLimits(prefix) and call('SISMEMBER', prefix .. 'limited', group) == 1
end

-- Redis keeps small hashes and sorted sets as listpacks, flat lists (by default up to 512 hash
-- fields or 128 set members, of up to 64 bytes each) in which finding or placing an entry reads
-- every entry before it. A key holding one value longer than that is made a table (a hash) or a
-- skiplist (a sorted set) on its first write, and Redis never turns it back into a list: the
-- busy keys of a queue hold such a pad, which their readers skip.
local PAD = '-----------------------------------------------------------------'

-- The marks of a run's lease member (see `leases` in the key layout).
local SCHEDULED_MARK, RUNNING_MARK, CANCEL_MARK = ':', '!', '?'

-- The pad member of `leases` (see PAD), with an expiry never reached: as a listpack, the set of
-- a hundred runs in progress cost a take some 30,000 instructions a lease (every member read to
-- find the new one, then to place it). It is no run's (it does not begin with a token).
local LEASES_PAD, LEASES_PAD_EXPIRY = PAD, '+inf'

-- The member of `leases` of the run of job `id` holding lease `token`, the job in `state`
-- (scheduled or running) with cancel flag `cancel`.
local function leaseMember(token, state, cancel, id)
  local mark = SCHEDULED_MARK
  if cancel == '1' then mark = CANCEL_MARK elseif state == 'running' then mark = RUNNING_MARK end
  return token .. mark .. id
end

-- The job id of a member of `leases` (the token is digits, then comes the one-character mark);
-- nil for the pad.
local function leaseJobId(member)
  return string.match(member, '^%d+[:!?](.*)$')
end

-- Every member of `leases` (the runs in progress; the pad is skipped), with its expiry (ms) at
-- most `maxScore` when given (at most `limit` of them): calls visit(job id, member) for each.
local function leasedJobs(prefix, visit, maxScore, limit)
  local key, members = prefix .. 'leases', nil
  if maxScore then
    members = call('ZRANGEBYSCORE', key, '-inf', str(maxScore), 'LIMIT', '0', str(limit))
  else
    members = call('ZRANGE', key, '0', '-1')
  end
  for _, member in ipairs(members) do
    local id = leaseJobId(member)
    if id then visit(id, member) end
  end
end

-- The runs in progress (jobs in `leases`, scheduled or running) per group: { group = count }, of
-- every group, or of group `only` alone.
local function runningByGroup(prefix, only)
  local counts = {}
  leasedJobs(prefix, function(id)
    local job = call('HMGET', prefix .. 'j:' .. id, 'state', 'group')
    if (job[1] == 'scheduled' or job[1] == 'running') and (not only or job[2] == only) then
      counts[job[2]] = (counts[job[2]] or 0) + 1
    end
  end)
  return counts
end

-- The pad of `groups` (see PAD): as a listpack, at a few hundred groups each group a call reads
-- or writes would cost more than the rest of its job. Every write of `groups` also writes it,
-- as a field that no group can be (the empty name).
local GROUPS_PAD_FIELD, GROUPS_PAD = '', PAD

-- The argument lists group writes build (reused: the library keeps them across calls): records
-- (HSET, beginning with the pad field), groups joining the rotation, groups removed (HDEL).
local packed, joining, gone = { GROUPS_PAD_FIELD, GROUPS_PAD }, {}, {}

-- Sends `command key` with entries first..n of list `a` (first: 1 unless given), `per` entries
-- per command.
local function sendChunks(command, key, a, n, per, first)
  for i = first or 1, n, per do call(command, key, unpack(a, i, math.min(n, i + per - 1))) end
end

-- Writes the state of the groups `order` names (from `map`) and lists at the back of the
-- round-robin rotation each that may be picked and is not listed. A group that may not be
-- picked stays listed until a take pops it (see `rotation`). An idle group is removed from the
-- hash, so that it holds only groups with jobs, settings or a place of their own, however many
-- groups come and go. (A take writes the groups it visits itself, see includes/take.) Returns
-- true when any of them may be picked afterwards.
local function storeGroups(prefix, order, map)
  local np, nj, ng = 2, 0, 0
  local any = false
  for _, group in ipairs(order) do
    local g = map[group]
    local paused = g.paused and 1 or 0
    if eligibleState(paused, g.limit, g.running, g.nr + g.nh + g.nl) then
      any = true
      if not g.ready then
        joining[nj + 1], nj = group, nj + 1
        g.ready, g.turns = true, 0
      end
    end
    local r = groupRecord(g.running, g.stuck, g.nr, g.nh, g.nl, g.cnt, g.turns, g.limit, g.weight, paused, g.ready)
    if r == '' then
      gone[ng + 1], ng = group, ng + 1
    else
      packed[np + 1], packed[np + 2], np = group, r, np + 2
    end
  end
  if np > 2 then sendChunks('HSET', prefix .. 'groups', packed, np, 1000) end
  sendChunks('HDEL', prefix .. 'groups', gone, ng, 1000)
  sendChunks('RPUSH', prefix .. 'rotation', joining, nj, 1000)
  return any
end

-- Group counter changes collected during one script call and applied together by flushGroups: a
-- hundred finished jobs of one group cost one update, and a thousand groups one read and one
-- write. One map of increments per counter (group -> n), so that a group costs no table of its
-- own; the maps and the groups' list are kept across calls and emptied as they are applied.
local DEFERRED = { 'nr', 'nh', 'nl', 'stuck', 'running' }
local pendingDelta = {}
for i = 1, #DEFERRED do pendingDelta[DEFERRED[i]] = {} end
local pendingOrder, pending = {}, {}

local function deferGroup(group, field, n)
  if not pending[group] then
    pending[group] = true
    pendingOrder[#pendingOrder + 1] = group
  end
  local byGroup = pendingDelta[field]
  byGroup[group] = (byGroup[group] or 0) + n
end

-- Empties the collected changes, adding them to the groups of `map` when given. Each map is
-- walked over the increments it holds (a bulk of jobs over many groups has one each), not over
-- every counter of every group.
local function takePending(map)
  for i = 1, #DEFERRED do
    local field = DEFERRED[i]
    local byGroup = pendingDelta[field]
    for group, d in next, byGroup do
      if map then
        local g = map[group]
        g[field] = g[field] + d
      end
      byGroup[group] = nil
    end
  end
  for i = 1, #pendingOrder do pending[pendingOrder[i]] = nil end
end

-- A record's bytes (GROUP_FORMAT, 4 a field) from its limit on, checked by flushGroups: no limit
-- (bytes 29-32), not paused and listed in the rotation (bytes 37-44; the weight lies between).
local NO_LIMIT, UNPAUSED_LISTED = '\0\0\0\0', '\0\0\0\0\1\0\0\0'
-- The lengths of a group's lists, bytes 9-20 of its record.
local LIST_LENGTHS = '<i4i4i4'

-- What flushGroups builds (reused: the library keeps them across calls): the groups it updates
-- field by field, and the records it rewrites in place (beginning with the pad, see storeGroups).
local fullGroups, lengthsOnly = {}, { GROUPS_PAD_FIELD, GROUPS_PAD }

-- Applies the collected changes. A group listed in the rotation, with no limit, not paused, that
-- is only given jobs (the usual case of a submit, and of a group visited by a bulk) stays as it
-- is but for the lengths of its lists: its record is rewritten with those alone, without
-- unpacking and packing it whole. Every other group goes through storeGroups. Returns true when
-- any of the updated groups is in the rotation afterwards.
local function flushGroups(prefix)
  local n = #pendingOrder
  if n == 0 then return false end
  local key = prefix .. 'groups'
  local dnr, dnh, dnl = pendingDelta.nr, pendingDelta.nh, pendingDelta.nl
  local dstuck, drunning = pendingDelta.stuck, pendingDelta.running
  local map, any = {}, false
  local nf, nl = 0, 2
  local sub = string.sub
  for i = 1, n, 1000 do
    local v, last = readGroups(prefix, pendingOrder, i)
    for k = i, last do
      local group, r = pendingOrder[k], v[k - i + 1]
      local a, b, c = dnr[group] or 0, dnh[group] or 0, dnl[group] or 0
      if r and a >= 0 and b >= 0 and c >= 0 and a + b + c > 0 and not dstuck[group] and not drunning[group]
        and sub(r, 29, 32) == NO_LIMIT and sub(r, 37, 44) == UNPAUSED_LISTED then
        local nr, nh, nl_ = structUnpack(LIST_LENGTHS, r, 9)
        lengthsOnly[nl + 1], lengthsOnly[nl + 2], nl = group,
          sub(r, 1, 8) .. structPack(LIST_LENGTHS, nr + a, nh + b, nl_ + c) .. sub(r, 21), nl + 2
        dnr[group], dnh[group], dnl[group] = nil, nil, nil
        any = true
      else
        fullGroups[nf + 1], nf = group, nf + 1
        map[group] = unpackGroup(r)
      end
    end
  end
  for i = #lengthsOnly, nl + 1, -1 do lengthsOnly[i] = nil end
  if nl > 2 then sendChunks('HSET', key, lengthsOnly, nl, 1000) end
  -- (the full updates: every increment left is of one of those groups)
  takePending(map)
  clearList(pendingOrder)
  for i = #fullGroups, nf + 1, -1 do fullGroups[i] = nil end
  if nf > 0 and storeGroups(prefix, fullGroups, map) then any = true end
  clearList(fullGroups)
  return any
end

-- Sorted-set writes collected during one script call and sent as one command per key (in
-- chunks), by flushLater. The lists per key are kept across calls and emptied as they are sent;
-- a key is listed in laterKeys when its list gets its first entry of the call.
local laterAdds, laterRems, laterKeys = {}, {}, {}

-- The list of writes to `key` in `map`, to append to: in laterAdds score, member pairs (ZADD), in
-- laterRems members (ZREM).
local function laterList(map, key)
  return callList(map, laterKeys, key)
end

-- Sends (unless `drop`) and empties the collected writes.
local function flushLater(drop)
  for i = 1, #laterKeys do
    local key = laterKeys[i]
    local r, a = laterRems[key], laterAdds[key]
    if r and r[1] then
      if not drop then sendChunks('ZREM', key, r, #r, 500) end
      clearList(r)
    end
    if a and a[1] then
      if not drop then sendChunks('ZADD', key, a, #a, 1000) end
      clearList(a)
    end
  end
  clearList(laterKeys)
end

-- Wakes one idle executor (its BZPOPMIN on `marker` returns); once per script call is enough.
local woken = false
local function wake(prefix)
  if woken then return end
  woken = true
  call('ZADD', prefix .. 'marker', '0', 'w')
end

-- Trims a finished-state set to `keep` jobs once it runs over by more than a twentieth of
-- `keep` (so that a large set is trimmed in steps of many jobs, not one per call), removing at
-- most 200 per call.
local function trimFinished(prefix, state, keep)
  keep = num(keep)
  if keep < 0 then return end
  local key = prefix .. 'done:' .. state
  local excess = call('ZCARD', key) - keep
  if excess <= math.floor(keep / 20) then return end
  if excess > 200 then excess = 200 end
  local ids = call('ZRANGE', key, '0', str(excess - 1))
  local doomed = {}
  for _, id in ipairs(ids) do
    doomed[#doomed + 1] = prefix .. 'j:' .. id
    doomed[#doomed + 1] = prefix .. 'j:' .. id .. ':logs'
  end
  if #doomed > 0 then call('DEL', unpack(doomed)) end
  call('ZREMRANGEBYRANK', key, '0', str(excess - 1))
  countDelta[state] = (countDelta[state] or 0) - #ids
end

-- Starts a script call. The scripts are functions of one library (see src/redis/scripts.ts), so
-- what is defined above lives across calls: what one call collects (state changes, deferred
-- group and set writes, the turn counter it read, whether it woke an executor) starts afresh.
local function beginCall()
  call, structPack, structUnpack = redis.call, struct.pack, struct.unpack
  for i = 1, #stateOrder do
    local state = stateOrder[i]
    -- a long list is let go (cjson walks the whole storage of a list it encodes)
    if #stateIds[state] > 32 then stateIds[state] = nil else clearList(stateIds[state]) end
  end
  clearList(stateOrder)
  if next(events) then events = {} end
  for state in pairs(countDelta) do countDelta[state] = 0 end
  if next(periodicFailures) then periodicFailures = {} end
  if pendingOrder[1] then
    takePending()
    clearList(pendingOrder)
  end
  flushLater(true)
  woken = false
  anyLimited = nil
  groupPoolNext = 1
end
