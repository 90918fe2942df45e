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
-- The key suffix of a group's list, by the field counting its jobs.
local LIST_SUFFIX = { nr = ':r', nh = ':h', nl = ':l' }

-- Entries per job in a take's reply.
local TAKEN_WIDTH = 4

-- What a take collects as it goes (reused: the library keeps them across calls): the reply
-- (written over from its start, its stale tail cleared at the end), the leases (counted, never
-- cleared), and, emptied as a take begins, the groups sent to the back of the walk, the groups'
-- state (by name: every group read) and the groups visited, in first-seen order.
local takenJobs, takenLeases, backOfWalk, visited, visitOrder = {}, {}, {}, {}, {}
-- An empty list (never written to).
local EMPTY = {}

local function takeJobs(prefix, worker, n, high, low, lease, now)
  local leaseAt = str(now + lease)
  local rotationKey = prefix .. 'rotation'
  local jobs, leases, back, touched, order = takenJobs, takenLeases, backOfWalk, visited, visitOrder
  -- (the reply is overwritten from its start; what an earlier, larger take left past its end is
  -- cleared at the end)
  clearList(back)
  clearList(order)
  for group in pairs(touched) do touched[group] = nil end

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
  -- time (with their state), a group whose turn ends goes to the back of the walk (it follows
  -- every group still in `rotation`), and the groups' state, their places in it and the
  -- leases are written once at the end (storeGroups). The order is the same as taking one job
  -- per call, at a fraction of the calls.
  -- (the leases begin with the pad, written with every take's leases: see LEASES_PAD)
  leases[1], leases[2] = LEASES_PAD_EXPIRY, LEASES_PAD
  local taken, nl = 0, 2
  -- jobs taken from the high and low lists (all waiting), and the ids listed as scheduled
  local fromWaiting, scheduled = 0, nil
  local seq -- the last take sequence number handed out; n numbers are reserved at the first job
  local window, wi = EMPTY, 1
  local exhausted = false
  local bi = 1

  while taken < n do
    -- The next group of the walk: from the window (pop the next one when it is used up), then
    -- from the back of the walk.
    local group, g
    if wi > #window and not exhausted then
      window = call('LPOP', rotationKey, str(n - taken)) or EMPTY
      wi = 1
      if #window == 0 then exhausted = true end
      loadGroups(prefix, window, touched)
    end
    if wi <= #window then
      group, wi = window[wi], wi + 1
      g = touched[group]
      if g.popped then
        -- listed twice (only while an older build's executors run beside this one, see
        -- recover.lua): the later entry is dropped
        g = nil
      else
        g.popped = true
        order[#order + 1] = group
        -- a group that stopped being runnable since it was listed is dropped (storeGroups)
        if not eligible(g) then g = nil end
      end
    elseif bi <= #back then
      group, bi = back[bi], bi + 1
      g = touched[group]
    else
      break
    end
    local resynced = false
    -- The group keeps the turn for `weight` takes.
    while g and taken < n do
      -- The list to take from: runnable stuck/released first, then the counting scheme's choice.
      local list
      local cnt = g.cnt
      if g.nr > 0 then
        list = 'nr'
      else
        local preferHigh = cnt < high
        if (preferHigh and g.nh > 0) or g.nl == 0 then list = 'nh' else list = 'nl' end
        cnt = (cnt + 1) % (high + low)
      end
      local id = g[list] > 0 and call('RPOP', prefix .. 'g:' .. group .. LIST_SUFFIX[list]) or false
      if not id then
        -- Counters and lists disagree (cannot happen through these scripts): resync once.
        if resynced then g.nr, g.nh, g.nl = 0, 0, 0 break end
        resynced = true
        local gk = prefix .. 'g:' .. group
        g.nr = call('LLEN', gk .. ':r')
        g.nh = call('LLEN', gk .. ':h')
        g.nl = call('LLEN', gk .. ':l')
        if g.nr + g.nh + g.nl == 0 then break end
      else
        g.cnt = cnt
        g[list] = g[list] - 1
        local jobKey = prefix .. 'j:' .. id
        local job, retried
        if list == 'nr' then
          -- a stuck or released job: its state, and, when it failed before, its retry count,
          -- retry time and last error
          job = call('HMGET', jobKey, 'd', 'submitted', 'state', 'retries', 'due', 'error')
          left(job[3])
          if job[3] == 'stuck' then g.stuck = g.stuck - 1 end
          retried = job[4] and { job[4], job[5], job[6] } or false
        else
          -- a waiting job of the high or low list, which has not failed since it was submitted
          -- (a retry by hand puts a job back with its count reset, see retry.lua)
          job = call('HMGET', jobKey, 'd', 'submitted')
          retried = false
          fromWaiting = fromWaiting + 1
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
        local k = 1 + taken * TAKEN_WIDTH
        jobs[k + 1], jobs[k + 2], jobs[k + 3], jobs[k + 4] = id, job[1], job[2], retried
        taken = taken + 1
        if g.limit > 0 then g.running = g.running + 1 end
        g.turns = g.turns + 1
        if not eligible(g) then break end
        if g.turns >= g.weight then
          g.turns = 0
          back[#back + 1] = group
          g.requeue = #back
          break
        end
      end
    end
  end

  for i = #jobs, taken > 0 and 2 + taken * TAKEN_WIDTH or 1, -1 do jobs[i] = nil end
  if fromWaiting > 0 then countDelta.waiting = (countDelta.waiting or 0) - fromWaiting end

  -- Groups popped and not reached keep their places at the front.
  for k = wi, #window do
    local g = touched[window[k]]
    if not g.popped then
      g.popped = true
      order[#order + 1] = window[k]
    end
  end

  -- Write back: the groups and the rotation, the leases.
  local anyLeft = storeGroups(prefix, order, touched, back)
  if nl > 2 then sendChunks('ZADD', prefix .. 'leases', leases, nl, 1000) end

  -- Someone else may take what is left: pass the wake-up on (unless this call woke one already).
  -- A group this take visited that is still in the rotation says so without reading `rotation`.
  if n > 0 and taken == n and not woken and (anyLeft or call('LLEN', rotationKey) > 0) then wake(prefix) end
  if #due > 0 then head = call('ZRANGE', delayedKey, '0', '0', 'WITHSCORES') end
  return jobs, head[2] and tonumber(head[2]) or -1
end
