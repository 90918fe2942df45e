--[[
  Takes up to n jobs for executor `worker`, fairly: groups are picked round-robin from the shared
  rotation (a weight-w group keeps the turn for w takes); inside a group a runnable stuck job
  comes first, then the counting scheme (high, low) picks high or low priority, falling back to
  the other when one is empty; FIFO inside a priority. A group with a rate limit takes no more
  than its rate allows, and leaves the rotation at its rate (includes/rateLog). Due stuck jobs,
  delayed jobs and parked groups are promoted first (promoteDue).
  Each taken job is marked `scheduled` with the executor id, gets a lease in `leases` (now +
  lease ms), and its take sequence number (takeSeq), which is also the lease token. Sequence
  numbers increase with every take and never fall below the take's time (ms) × SEQ_PER_MS; one
  reserved by a take that found fewer jobs is skipped.
  Returns the jobs as one flat list: the take sequence number of the first job (the others have
  the next ones, in order), then TAKEN_WIDTH entries per job: id, description (field d),
  submitted (for a job submitted with a due time, { submitted, runAt }), and false, or for a job
  that failed before (one of its group's preferred list)
  { retries, due, error }; empty when it took none. And the next due time in `delayed` (a stuck
  or delayed job, or a parked group; ms) or -1. The caller flushes the changes (flushChanges).

  The steps: promoteDue, then walkRotation, which visits one group after another (visitGroup),
  then writeBack.
]]
--- @include "includes/wire"
--- @include "includes/common"
--- @include "includes/changes"
--- @include "includes/groupRecord"
--- @include "includes/groups"
--- @include "includes/groupChanges"
--- @include "includes/leases"
--- @include "includes/jobs"
--- @include "includes/rateLog"
--- @export takeJobs

local takeJobs

-- (the take's state is local to this block: its steps share it, nothing else reaches it)
do
  -- The take in progress, set as it begins: its queue, executor, most jobs to take, counting
  -- scheme, and its leases' expiry (as text).
  local prefix, worker, wanted, high, low, leaseAt
  -- The take's time (ms), for rate limits, and whether it parked a group (at its rate).
  local takeNow, parked
  -- What it has taken (reused: the library keeps the lists across calls): the reply (written
  -- over from its start, its stale tail cleared at the end) holding `taken` jobs; the leases to
  -- add up to entry `leaseEnd` (beginning with the pad, written with every take's leases: see
  -- LEASES_PAD); the last take sequence number handed out (`wanted` are reserved at the first
  -- job); the list of ids entered `scheduled`; the jobs taken from the high and low lists.
  local jobs, leases = {}, { LEASES_PAD_EXPIRY, LEASES_PAD }
  local taken, leaseEnd, seq, scheduled, fromWaiting

  -- Reserves `wanted` take sequence numbers; answers the one before the first. The numbers never
  -- fall below the take's time (ms) times SEQ_PER_MS: a primary promoted after a failover that
  -- lost takes holds an older counter, and without the floor it would hand a job a lease token
  -- its lost take had already given to another executor, whose finish would then be accepted.
  local SEQ_PER_MS = 1000
  local function reserveSeq()
    local key = KEY.seq(prefix)
    local last = tonumber(call('GET', key)) or 0
    local floor = takeNow * SEQ_PER_MS
    if last < floor then last = floor end
    call('SET', key, str(last + wanted))
    return last
  end

  -- The walk of the rotation: the window of groups popped from `rotation` and their records,
  -- `wi` the next to visit; whether `rotation` is used up; the groups whose turn ended (the back
  -- of the walk, in that order), `bi` the next the walk comes back to; the group that keeps the
  -- turn (it stays at the front).
  local rotationKey, window, windowRecords, wi, exhausted
  local back, bi = {}, 1
  local keeping
  -- What the visited groups are left with, by name: the record as the take leaves it ('' to
  -- remove it), or, for a group the walk comes back to once the rotation is used up, its fields
  -- (a table of kept), packed at the end.
  local records, kept = {}, {}
  -- The groups put back at the front of the rotation.
  local front = {}

  -- The tables of kept fields, handed out in turn (keptFields) from the first each take.
  local keptTables, keptUsed = {}, 0
  local function keptFields()
    keptUsed = keptUsed + 1
    local t = keptTables[keptUsed]
    if not t then
      t = {}
      keptTables[keptUsed] = t
    end
    return t
  end

  -- A list of one id (written over by each one-job pop).
  local one = {}

  -- Brings back a group parked at its rate (its window freed): trims its log, so that it joins
  -- the rotation again with the group changes (it parks again if it is still at its rate).
  local function unparkGroup(group, now)
    local r = call('HGET', KEY.groups(prefix), group)
    if not r then return end
    local rate, per, logged = select(12, decodeGroup(r))
    if rate == 0 then return end
    local removed = trimRateLog(prefix, group, per, now)
    deferGroup(group, 'logged', -removed)
    if logged - removed >= rate then parkRated(prefix, group, rate, per, logged - removed) end
  end

  -- Promotes what is due in `delayed`: stuck jobs whose retry time has come go to their group's
  -- preferred list; delayed jobs become waiting, at the back of their priority's list; groups
  -- parked at their rate come back (unparkGroup). Returns the head of `delayed` (it tells
  -- whether any is due, and is the next due time when none is), and whether any was promoted
  -- (the head is then read again at the end).
  local function promoteDue(now)
    local delayedKey = KEY.delayed(prefix)
    local head = call('ZRANGE', delayedKey, '0', '0', 'WITHSCORES')
    if not (head[2] and tonumber(head[2]) <= now) then return head, false end
    local due = call('ZRANGEBYSCORE', delayedKey, '-inf', str(now), 'LIMIT', '0', '1000')
    if #due == 0 then return head, false end
    -- (the parked groups' members are removed before unparkGroup may park one again)
    call('ZREM', delayedKey, unpack(due))
    local waiting
    for _, id in ipairs(due) do
      if stringSub(id, 1, 1) == GROUP_DUE_MARK then
        unparkGroup(stringSub(id, 2), now)
      else
        local jobKey = KEY.job(prefix, id)
        local job = call('HMGET', jobKey, 'group', 'state')
        local group = job[1]
        if job[2] == 'delayed' then
          local isHigh = describeJob(call('HGET', jobKey, 'd')) == 'high'
          call('HSET', jobKey, 'state', 'waiting')
          call('LPUSH', KEY.groupList(prefix, group, isHigh and 'h' or 'l'), id)
          deferGroup(group, isHigh and 'nh' or 'nl', 1)
          left('delayed')
          waiting = waiting or changedList('waiting')
          waiting[#waiting + 1] = id
        elseif group then
          call('LPUSH', KEY.groupList(prefix, group, 'r'), id)
          deferGroup(group, 'nr', 1)
        end
      end
    end
    flushGroups(prefix)
    return head, true
  end

  -- Visits `group` (its record `r`, or its kept fields `t`): it keeps the turn for `weight`
  -- takes, each step taking the jobs that come from one list in a row (one RPOP): runnable
  -- stuck/released jobs first, then the counting scheme's choice, which is one list for as long
  -- as the other is empty. Then leaves it listed while runnable: at the back of the walk when its
  -- turn ended, else (the take reached `wanted` within its turn) at the front of the rotation.
  local function visitGroup(group, r, t)
    local running, stuck, nr, nh, nl, cnt, turns, limit, weight, paused, _, rate, per, logged
    if t then
      running, stuck, nr, nh, nl = t.running, t.stuck, t.nr, t.nh, t.nl
      cnt, turns, limit, weight, paused = t.cnt, t.turns, t.limit, t.weight, t.paused
      rate, per, logged = t.rate, t.per, t.logged
    elseif r then
      -- (decodeGroup written out, in the take's hot loop: one call fewer a group)
      if #r == SHORT_BYTES then
        running, stuck, nr, nh, nl, cnt, turns, limit, weight, paused = structUnpack(SHORT_FORMAT, r)
        rate, per, logged = 0, 0, 0
      else
        running, stuck, nr, nh, nl, cnt, turns, limit, weight, paused, _, rate, per, logged = structUnpack(GROUP_FORMAT, r)
      end
    else
      running, stuck, nr, nh, nl, cnt, turns, limit, weight, paused, _, rate, per, logged = decodeGroup(nil)
    end
    -- (a turn past its weight, the weight lowered meanwhile, ends with the next take)
    if turns >= weight then turns = weight - 1 end
    -- (a group that stopped being runnable since it was listed takes nothing and is dropped; one
    -- the walk comes back to ended its turn runnable)
    local runnable = t ~= nil or eligibleState(paused, limit, running, nr + nh + nl, rate, logged)
    -- Alone in the walk (the rotation used up, no other group to come back to), the group's
    -- turns follow one another with nothing between them: it takes on past the end of a turn.
    local alone = exhausted and wi > #window and bi > #back
    local ended = false
    while runnable and taken < wanted do
      local room = wanted - taken
      if not alone and weight - turns < room then room = weight - turns end
      if limit > 0 and limit - running < room then room = limit - running end
      -- (a log that may not have room: trimmed to the window, what is left of the rate counts)
      if rate > 0 and logged + room > rate then
        logged = logged - trimRateLog(prefix, group, per, takeNow)
        if rate - logged < room then room = rate - logged end
      end
      local list, k
      if nr > 0 then
        list, k = 'r', nr
      elseif nh == 0 or nl == 0 then
        if nh > 0 then list, k = 'h', nh else list, k = 'l', nl end
      else
        if cnt < high then list = 'h' else list = 'l' end
        k = 1
      end
      if k > room then k = room end
      -- The step: up to k ids popped with one RPOP (one job without a count: the answer is then
      -- the id, not a list of one), each marked scheduled with its lease and take sequence number,
      -- and added to the reply.
      local ids, got
      if k == 1 then
        ids = call('RPOP', KEY.groupList(prefix, group, list))
        one[1], ids, got = ids, one, ids and 1 or 0
      else
        ids = call('RPOP', KEY.groupList(prefix, group, list), str(k)) or EMPTY
        got = #ids
      end
      local n, leaseN, s, unstuck = taken, leaseEnd, seq, 0
      for j = 1, got do
        local id = ids[j]
        local jobKey = KEY.job(prefix, id)
        local job, retried
        if list == 'r' then
          -- a stuck or released job: its state, and, when it failed before, its retry count,
          -- retry time and last error
          job = call('HMGET', jobKey, 'd', 'submitted', 'runAt', 'state', 'retries', 'due', 'error')
          left(job[4])
          if job[4] == 'stuck' then unstuck = unstuck + 1 end
          retried = job[5] and { job[5], job[6], job[7] } or false
        else
          -- a waiting job of the high or low list, which has not failed since it was submitted
          -- (a retry by hand puts a job back with its count reset, see retry.lua)
          job = call('HMGET', jobKey, 'd', 'submitted', 'runAt')
          retried = false
        end
        s = (s or reserveSeq()) + 1
        local token = string.format('%d', s)
        if rate > 0 then
          -- (a rate-limited group's job keeps the time its rate counted it at)
          call('HSET', jobKey, 'state', 'scheduled', 'worker', worker, 'takeSeq', token, 'taken', str(takeNow))
        else
          call('HSET', jobKey, 'state', 'scheduled', 'worker', worker, 'takeSeq', token)
        end
        leases[leaseN + 1], leases[leaseN + 2], leaseN = leaseAt, token .. SCHEDULED_MARK .. id, leaseN + 2
        if n == 0 then
          jobs[1] = s
          scheduled = changedList('scheduled')
        end
        scheduled[#scheduled + 1] = id
        local at = 1 + n * TAKEN_WIDTH
        -- (a job submitted with a due time answers { submitted, runAt })
        jobs[at + 1], jobs[at + 2], jobs[at + 4] = id, job[1], retried
        jobs[at + 3] = job[3] and { job[2], job[3] } or job[2]
        n = n + 1
      end
      taken, leaseEnd, seq = n, leaseN, s
      -- A list shorter than its count (counters and lists disagree, which cannot happen through
      -- these scripts) is empty now: its count is set right.
      if list == 'r' then
        stuck = stuck - unstuck
        nr = got < k and 0 or nr - got
      else
        fromWaiting = fromWaiting + got
        cnt = (cnt + got) % (high + low)
        if list == 'h' then nh = got < k and 0 or nh - got else nl = got < k and 0 or nl - got end
      end
      if limit > 0 then running = running + got end
      if rate > 0 and got > 0 then
        logRateStarts(prefix, group, takeNow, s - got + 1, got)
        logged = logged + got
        if logged >= rate then logged = logged - trimRateLog(prefix, group, per, takeNow) end
      end
      turns = turns + got
      -- (eligibleState, written out for a group not paused: a call a step cost a drained job 1%)
      runnable = (limit == 0 or running < limit) and nr + nh + nl > 0 and (rate == 0 or logged < rate)
      if turns >= weight then
        turns = turns % weight
        if alone then
          ended = runnable and turns == 0
        elseif runnable then
          ended = true
          break
        end
      end
    end
    if ended then back[#back + 1] = group elseif runnable then keeping = group end
    -- (a group at its rate leaves the rotation until its window frees)
    if rate > 0 and logged >= rate then
      parkRated(prefix, group, rate, per, logged)
      parked = true
    end
    if ended and exhausted then
      -- the walk comes back to it in this take: its fields are kept as they are
      if not t then
        t = keptFields()
        kept[group], records[group] = t, nil
      end
      t.running, t.stuck, t.nr, t.nh, t.nl = running, stuck, nr, nh, nl
      t.cnt, t.turns, t.limit, t.weight, t.paused = cnt, turns, limit, weight, paused
      t.rate, t.per, t.logged = rate, per, logged
    else
      if t then kept[group] = nil end
      records[group] = encodeGroup(running, stuck, nr, nh, nl, cnt, turns, limit, weight, paused, runnable, rate, per, logged)
    end
  end

  -- Walks the rotation in memory: groups are popped from the front of `rotation` a window at a
  -- time (with their records), a group whose turn ends goes to the back of the walk (it follows
  -- every group still in `rotation`), and the walk comes back to those once the rotation is used
  -- up. The order is the same as taking one job per call, at a fraction of the calls.
  local function walkRotation()
    while taken < wanted do
      local group, r
      if wi > #window and not exhausted then
        local want = math.min(wanted - taken, 1000)
        window = call('LPOP', rotationKey, str(want)) or EMPTY
        wi = 1
        -- (fewer than asked for: the rotation is used up)
        exhausted = #window < want
        if #window > 0 then windowRecords = readGroups(prefix, window, 1) end
      end
      if wi <= #window then
        group, r, wi = window[wi], windowRecords[wi], wi + 1
        visitGroup(group, r, nil)
      elseif bi <= #back then
        group, bi = back[bi], bi + 1
        visitGroup(group, records[group], kept[group])
      else
        return
      end
    end
  end

  -- Writes back the groups' records, their places in the rotation and the leases. The rotation:
  -- the group keeping the turn, then the groups popped and not reached (in their order, records
  -- unchanged) at the front; at the back the groups whose turn ended and that the walk did not
  -- reach again (a group's entry the walk reached was followed by a visit).
  local function writeBack()
    if keeping then front[1] = keeping end
    for k = wi, #window do front[#front + 1] = window[k] end
    local ng, np = 0, 2
    for group, r in next, records do
      if r == '' then
        goneGroups[ng + 1], ng = group, ng + 1
      else
        packed[np + 1], packed[np + 2], np = group, r, np + 2
      end
    end
    -- (a group the walk came back to is listed: its turn ended with jobs left)
    for group, t in next, kept do
      packed[np + 1], packed[np + 2], np = group,
        encodeGroup(t.running, t.stuck, t.nr, t.nh, t.nl, t.cnt, t.turns, t.limit, t.weight, t.paused, true, t.rate, t.per,
          t.logged), np + 2
    end
    if np > 2 then sendChunks('HSET', KEY.groups(prefix), packed, np, 1000) end
    sendChunks('HDEL', KEY.groups(prefix), goneGroups, ng, 1000)
    -- (LPUSH puts each at the head in turn: the front groups go in reverse, to keep their order)
    local nf = #front
    for i = 1, math.floor(nf / 2) do front[i], front[nf + 1 - i] = front[nf + 1 - i], front[i] end
    sendChunks('LPUSH', rotationKey, front, nf, 1000)
    sendChunks('RPUSH', rotationKey, back, #back, 1000, bi)
    if leaseEnd > 2 then sendChunks('ZADD', KEY.leases(prefix), leases, leaseEnd, 1000) end
    return nf + #back - bi + 1
  end

  takeJobs = function(prefix_, worker_, n, high_, low_, lease, now)
    prefix, worker, wanted, high, low, leaseAt = prefix_, worker_, n, high_, low_, str(now + lease)
    taken, leaseEnd, seq, scheduled, fromWaiting = 0, 2, nil, nil, 0
    takeNow, parked = now, false
    rotationKey, window, windowRecords, wi, exhausted = KEY.rotation(prefix), EMPTY, EMPTY, 1, false
    bi, keeping = 1, nil
    clearList(back)
    clearList(front)
    for group in pairs(records) do records[group] = nil end
    for group in pairs(kept) do kept[group] = nil end
    keptUsed = 0

    local head, promoted = promoteDue(now)
    walkRotation()
    for i = #jobs, taken > 0 and 2 + taken * TAKEN_WIDTH or 1, -1 do jobs[i] = nil end
    if fromWaiting > 0 then countDelta.waiting = (countDelta.waiting or 0) - fromWaiting end
    local listed = writeBack()
    -- Someone else may take what is left: pass the wake-up on (unless this call woke one
    -- already). A group this take left in the rotation says so without reading `rotation`.
    if n > 0 and taken == n and not woken and (listed > 0 or call('LLEN', rotationKey) > 0) then wake(prefix) end
    if promoted or parked then head = call('ZRANGE', KEY.delayed(prefix), '0', '0', 'WITHSCORES') end
    return jobs, head[2] and tonumber(head[2]) or -1
  end
end
