--[[
  Takes up to n jobs for executor `worker`, fairly: groups are picked round-robin from the shared
  rotation (a weight-w group keeps the turn for w takes); inside a group a runnable stuck job
  comes first, then the counting scheme (high, low) picks high or low priority, falling back to
  the other when one is empty; FIFO inside a priority. Due stuck jobs are promoted first.
  Each taken job is marked `scheduled` with the executor id, gets a lease in `leases` (now +
  lease ms), and its take sequence number (takeSeq), which is also the lease token. Sequence
  numbers increase with every take; one reserved by a take that found fewer jobs is skipped.
  Returns the jobs as one flat list: the take sequence number of the first job (the others have
  the next ones, in order), then four entries per job (TAKEN_WIDTH): id, description (field d),
  submitted, and false, or for a job that failed before (one of its group's preferred list)
  { retries, due, error }; empty when it took none. And the next stuck job's due time (ms) or
  -1. The caller flushes the changes (flushChanges).
]]
-- Entries per job in a take's reply.
local TAKEN_WIDTH = 4

-- What a take collects as it goes (reused: the library keeps them across calls): the reply
-- (written over from its start, its stale tail cleared at the end), the leases (counted, never
-- cleared), and, emptied as a take begins: the groups whose turn ended (the back of the walk, in
-- that order); the groups visited, by name, each with its record as the take leaves it ('' to
-- remove it, true while its fields are kept); the kept fields of the groups the walk will come back to,
-- by name; the groups kept at the front of the rotation.
local takenJobs, takenLeases, backOfWalk, visited, keptFields, frontOfRotation = {}, {}, {}, {}, {}, {}
-- The tables kept fields are held in, handed out in turn (walkState) from the first each take.
local walkStates, walkStatesUsed = {}, 0
local function walkState()
  walkStatesUsed = walkStatesUsed + 1
  local t = walkStates[walkStatesUsed]
  if not t then
    t = {}
    walkStates[walkStatesUsed] = t
  end
  return t
end

-- An empty list (never written to), and a list of one id (written over by each one-job pop).
local EMPTY, one = {}, {}

local function takeJobs(prefix, worker, n, high, low, lease, now)
  local leaseAt = str(now + lease)
  local rotationKey = prefix .. 'rotation'
  local jobs, leases, back, records, kept, front = takenJobs, takenLeases, backOfWalk, visited, keptFields, frontOfRotation
  -- (the reply is overwritten from its start; what an earlier, larger take left past its end is
  -- cleared at the end)
  clearList(back)
  clearList(front)
  for group in pairs(records) do records[group] = nil end
  for group in pairs(kept) do kept[group] = nil end
  walkStatesUsed = 0

  -- Promote stuck jobs whose retry time has come into their group's preferred list (the head of
  -- `delayed` tells whether any is due, and is the next due time when none is).
  local delayedKey = prefix .. 'delayed'
  local head = call('ZRANGE', delayedKey, '0', '0', 'WITHSCORES')
  local due = EMPTY
  if head[2] and tonumber(head[2]) <= now then
    due = call('ZRANGEBYSCORE', delayedKey, '-inf', str(now), 'LIMIT', '0', '1000')
  end
  if #due > 0 then
    for _, id in ipairs(due) do
      local group = call('HGET', prefix .. 'j:' .. id, 'group')
      if group then
        call('LPUSH', prefix .. 'g:' .. group .. ':r', id)
        deferGroup(group, 'nr', 1)
      end
    end
    call('ZREM', prefix .. 'delayed', unpack(due))
    flushGroups(prefix)
  end

  -- The rotation is walked in memory: groups are popped from the front of `rotation` a window at a
  -- time (with their records), a group whose turn ends goes to the back of the walk (it follows
  -- every group still in `rotation`), and the groups' records, their places in the rotation and
  -- the leases are written once at the end. The order is the same as taking one job per call, at
  -- a fraction of the calls. A visit works on the group's fields in locals (no table a group) and
  -- leaves its record packed in `records`, except once the rotation is used up: the walk then comes
  -- back to every group whose turn ends, so those keep their fields (`kept`) until the end.
  -- (the leases begin with the pad, written with every take's leases: see LEASES_PAD)
  leases[1], leases[2] = LEASES_PAD_EXPIRY, LEASES_PAD
  local taken, nl = 0, 2
  -- jobs taken from the high and low lists (all waiting), and the ids listed as scheduled
  local fromWaiting, scheduled = 0, nil
  local seq -- the last take sequence number handed out; n numbers are reserved at the first job
  local window, windowRecords, wi = EMPTY, EMPTY, 1
  local exhausted = false
  local bi = 1
  -- the group of the last visit when it keeps the turn (it stays at the front)
  local keeping = nil

  while taken < n do
    -- The next group of the walk: from the window (pop the next one when it is used up), then
    -- from the back of the walk.
    local group, r
    if wi > #window and not exhausted then
      local want = math.min(n - taken, 1000)
      window = call('LPOP', rotationKey, str(want)) or EMPTY
      wi = 1
      -- (fewer than asked for: the rotation is used up)
      exhausted = #window < want
      if #window > 0 then windowRecords = readGroups(prefix, window, 1) end
    end
    if wi <= #window then
      group, r, wi = window[wi], windowRecords[wi], wi + 1
    elseif bi <= #back then
      group, bi = back[bi], bi + 1
      r = records[group]
      if r == true then r = nil end
    else
      break
    end
    if group then
      local running, stuck, nr, nh, nl_, cnt, turns, limit, weight, paused = 0, 0, 0, 0, 0, 0, 0, 0, 1, 0
      local t = kept[group]
      if t then
        running, stuck, nr, nh, nl_, cnt, turns, limit, weight, paused = unpack(t, 1, 10)
      elseif r then
        running, stuck, nr, nh, nl_, cnt, turns, limit, weight, paused = structUnpack(GROUP_FORMAT, r)
      end
      -- (a turn past its weight, the weight lowered meanwhile, ends with the next take)
      if turns >= weight then turns = weight - 1 end
      local ended = false
      -- (a group that stopped being runnable since it was listed takes nothing and is dropped; one
      -- the walk comes back to ended its turn runnable)
      local runnable = t ~= nil or eligibleState(paused, limit, running, nr + nh + nl_)
      -- Alone in the walk (the rotation used up, no other group to come back to), the group's
      -- turns follow one another with nothing between them: it takes on past the end of a turn.
      local alone = exhausted and wi > #window and bi > #back
      -- The group keeps the turn for `weight` takes. Each step takes the jobs that come from one
      -- list in a row (one RPOP): runnable stuck/released jobs first, then the counting scheme's
      -- choice, which is one list for as long as the other is empty; FIFO inside a list.
      while runnable and taken < n do
        local room = n - taken
        if not alone and weight - turns < room then room = weight - turns end
        if limit > 0 and limit - running < room then room = limit - running end
        local list, k
        if nr > 0 then
          list, k = ':r', nr
        elseif nh == 0 or nl_ == 0 then
          if nh > 0 then list, k = ':h', nh else list, k = ':l', nl_ end
        else
          if cnt < high then list = ':h' else list = ':l' end
          k = 1
        end
        if k > room then k = room end
        -- (one job is popped without a count: the answer is then the id, not a list of one)
        local ids, got
        if k == 1 then
          ids = call('RPOP', prefix .. 'g:' .. group .. list)
          one[1], ids, got = ids, one, ids and 1 or 0
        else
          ids = call('RPOP', prefix .. 'g:' .. group .. list, str(k)) or EMPTY
          got = #ids
        end
        for j = 1, got do
          local id = ids[j]
          local jobKey = prefix .. 'j:' .. id
          local job, retried
          if list == ':r' then
            -- a stuck or released job: its state, and, when it failed before, its retry count,
            -- retry time and last error
            job = call('HMGET', jobKey, 'd', 'submitted', 'state', 'retries', 'due', 'error')
            left(job[3])
            if job[3] == 'stuck' then stuck = stuck - 1 end
            retried = job[4] and { job[4], job[5], job[6] } or false
          else
            -- a waiting job of the high or low list, which has not failed since it was submitted
            -- (a retry by hand puts a job back with its count reset, see retry.lua)
            job = call('HMGET', jobKey, 'd', 'submitted')
            retried = false
          end
          seq = (seq or call('INCRBY', prefix .. 'seq', str(n)) - n) + 1
          local token = string.format('%d', seq)
          call('HSET', jobKey, 'state', 'scheduled', 'worker', worker, 'takeSeq', token)
          leases[nl + 1], leases[nl + 2], nl = leaseAt, token .. SCHEDULED_MARK .. id, nl + 2
          if taken == 0 then
            jobs[1] = seq
            scheduled = changedList('scheduled')
          end
          scheduled[#scheduled + 1] = id
          local at = 1 + taken * TAKEN_WIDTH
          jobs[at + 1], jobs[at + 2], jobs[at + 3], jobs[at + 4] = id, job[1], job[2], retried
          taken = taken + 1
        end
        -- A list shorter than its count (counters and lists disagree, which cannot happen through
        -- these scripts) is empty now: its count is set right.
        if list == ':r' then
          nr = got < k and 0 or nr - got
        else
          fromWaiting = fromWaiting + got
          cnt = (cnt + got) % (high + low)
          if list == ':h' then nh = got < k and 0 or nh - got else nl_ = got < k and 0 or nl_ - got end
        end
        if limit > 0 then running = running + got end
        turns = turns + got
        -- (eligibleState, written out for a group not paused: a call a step cost a drained job 1%)
        runnable = (limit == 0 or running < limit) and nr + nh + nl_ > 0
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
      -- Listed afterwards while runnable: at the back when its turn ended, else (taken reached
      -- n within its turn) at the front. A group with nothing of its own is removed.
      if ended then back[#back + 1] = group elseif runnable then keeping = group end
      if ended and exhausted then
        -- visited again in this take (the walk comes back to every group whose turn ended once
        -- the rotation is used up): its fields are kept as they are, packed at the end
        if not t then
          t = walkState()
          kept[group], records[group] = t, true
        end
        t[1], t[2], t[3], t[4], t[5], t[6], t[7], t[8], t[9], t[10] =
          running, stuck, nr, nh, nl_, cnt, turns, limit, weight, paused
      else
        if t then kept[group] = nil end
        records[group] = groupRecord(running, stuck, nr, nh, nl_, cnt, turns, limit, weight, paused, runnable)
      end
    end
  end

  for i = #jobs, taken > 0 and 2 + taken * TAKEN_WIDTH or 1, -1 do jobs[i] = nil end
  if fromWaiting > 0 then countDelta.waiting = (countDelta.waiting or 0) - fromWaiting end

  -- Write back. The rotation: the group keeping the turn, then the groups popped and not reached
  -- (in their order, records unchanged) at the front; at the back the groups whose turn ended and
  -- that the walk did not reach again (a group's entry the walk reached was followed by a visit).
  if keeping then front[1] = keeping end
  for k = wi, #window do front[#front + 1] = window[k] end
  local ng, np = 0, 2
  for group, r in next, records do
    -- (a group the walk came back to is listed: its turn ended with jobs left)
    if r == true then
      local t = kept[group]
      r = groupRecord(t[1], t[2], t[3], t[4], t[5], t[6], t[7], t[8], t[9], t[10], true)
    end
    if r == '' then
      gone[ng + 1], ng = group, ng + 1
    else
      packed[np + 1], packed[np + 2], np = group, r, np + 2
    end
  end
  if np > 2 then sendChunks('HSET', prefix .. 'groups', packed, np, 1000) end
  sendChunks('HDEL', prefix .. 'groups', gone, ng, 1000)
  -- (LPUSH puts each at the head in turn: the front groups go in reverse, to keep their order)
  local nf = #front
  for i = 1, math.floor(nf / 2) do front[i], front[nf + 1 - i] = front[nf + 1 - i], front[i] end
  sendChunks('LPUSH', rotationKey, front, nf, 1000)
  local nb = #back - bi + 1
  sendChunks('RPUSH', rotationKey, back, #back, 1000, bi)
  if nl > 2 then sendChunks('ZADD', prefix .. 'leases', leases, nl, 1000) end

  -- Someone else may take what is left: pass the wake-up on (unless this call woke one already).
  -- A group this take left in the rotation says so without reading `rotation`.
  if n > 0 and taken == n and not woken and (#front + nb > 0 or call('LLEN', rotationKey) > 0) then wake(prefix) end
  if #due > 0 then head = call('ZRANGE', delayedKey, '0', '0', 'WITHSCORES') end
  return jobs, head[2] and tonumber(head[2]) or -1
end
