--[[
  Helpers of the periodic scripts. Periodic keys below the queue prefix (see periodicKeys in src/redis/keys.ts):
    p:t:<id>        HASH  a periodic task
    p:nextrun       ZSET  enabled task id -> when a scheduler must look at it next (ms)
    p:all           SET   ids of tasks defined through upsert
    p:owner:<owner> SET   ids of an owner's tasks
    p:h:<id>        ZSET  run history: job id, '~skipped@<occ>', '~missed@<first>@<count>@<last>' or
                          '~replaced@<occ>@<new occ>' -> occurrence (ms); an occurrence's job id is
                          entered when it is staged. An event rule's run history outlives its
                          pending-run task (which goes once its run is released) by the history age
    p:staged        ZSET  staged occurrences: <overlap code><job id>|<h|l><group> -> when to release it (ms):
                          its occurrence, or the next look at a run held by buffer-one. Its job
                          is `planned` until released (see periodic-stage, periodic-release)
    p:last          HASH  task id -> id of the last job submitted for it, for tasks whose overlap
                          policy needs it (not `allow`; otherwise see pLastFromHistory)
    p:buf           HASH  task id -> p:staged member of the run buffer-one holds back
    p:bf:<id>       HASH  backfill ledger: occurrence (ms) -> backfills of it (periodic-backfill)
    p:bq:<id>       ZSET  buffer-all backlog: p:staged member -> occurrence (periodic-release)
    p:live          HASH  since, at: when the schedulers' unbroken run of claims and releases began,
                          and the last of them (pLive)
    p:wake          pub/sub channel schedulers listen on
  A task's hash field `staged` lists the p:staged members its last stage added.
]]
--- @include "includes/common"
--- @export pTokens, pTrimHistory, pLastFromHistory, pUnstage, pRemove, pWake, pRunEnded, pLive

-- The p:nextrun scores of records' task ids (rec.id), in record order, with one ZMSCORE per 1000.
local function pTokens(nextrunKey, recs)
  local scores = {}
  for k = 1, #recs, 1000 do
    local ids = {}
    for j = k, math.min(#recs, k + 999) do ids[#ids + 1] = recs[j].id end
    local got = call('ZMSCORE', nextrunKey, unpack(ids))
    for j = 1, #got do scores[k + j - 1] = got[j] end
  end
  return scores
end

-- Trims a task's run history to `keep` past entries (-1: all) and `age` ms (-1: forever), by at
-- most 1,000 entries a call (a backfill may have added 100,000: the claims trim them in steps).
local function pTrimHistory(prefix, id, keep, age, now)
  local hk = KEY.pHistory(prefix, id)
  keep = tonumber(keep)
  local most = 1000
  if keep and keep >= 0 then
    -- entries are ordered by occurrence; those still ahead (staged) are not history yet
    local past = call('ZCOUNT', hk, '-inf', now)
    if past > keep then
      local n = math.min(past - keep, most)
      call('ZREMRANGEBYRANK', hk, 0, n - 1)
      most = most - n
    end
  end
  age = tonumber(age)
  if age and age >= 0 and most > 0 then
    local old = call('ZCOUNT', hk, '-inf', '(' .. (now - age))
    if old > 0 then call('ZREMRANGEBYRANK', hk, 0, math.min(old, most) - 1) end
  end
end

-- The newest submitted run of a task in its run history (skipping entries that are not jobs and
-- jobs still planned): its job id and state, or nil.
local function pLastFromHistory(prefix, id)
  local members = call('ZREVRANGE', KEY.pHistory(prefix, id), 0, 19)
  for _, m in ipairs(members) do
    if string.sub(m, 1, 1) ~= '~' then
      local st = call('HGET', KEY.job(prefix, m), 'state')
      if st and st ~= 'planned' then return m, st end
    end
  end
  return nil
end


-- Drops a task's staged occurrences that are not released yet (those of its last stage and the
-- one buffer-one holds): their planned jobs and history entries go.
local function pUnstage(prefix, id)
  local tk = KEY.pTask(prefix, id)
  local staged = call('HGET', tk, 'staged')
  local members = {}
  if staged and staged ~= '' then
    for m in string.gmatch(staged, '[^,]+') do members[#members + 1] = m end
  end
  local held = call('HGET', KEY.pBuf(prefix), id)
  if held then
    members[#members + 1] = held
    call('HDEL', KEY.pBuf(prefix), id)
  end
  for _, m in ipairs(members) do
    if call('ZREM', KEY.pStaged(prefix), m) == 1 then
      local jobId = string.match(m, '^.([^|]*)')
      call('DEL', KEY.job(prefix, jobId))
      call('ZREM', KEY.pHistory(prefix, id), jobId)
    end
  end
  if staged then call('HDEL', tk, 'staged') end
end

-- Removes a task and its indexes (not its jobs), its staged occurrences unless keepStaged, and
-- its run history unless keepHistory. Returns 1 when it existed.
local function pRemove(prefix, id, keepStaged, keepHistory)
  local tk = KEY.pTask(prefix, id)
  local owner = call('HGET', tk, 'owner')
  if not owner then return 0 end
  if not keepStaged then pUnstage(prefix, id) end
  call('HDEL', KEY.pLast(prefix), id)
  if owner ~= '' then call('SREM', KEY.pOwner(prefix, owner), id) end
  call('DEL', tk)
  if not keepHistory then call('DEL', KEY.pHistory(prefix, id)) end
  -- (its backfill ledger; a buffer-all backlog is dropped by periodic-release, in steps)
  call('UNLINK', KEY.pBackfilled(prefix, id))
  call('ZREM', KEY.pNextrun(prefix), id)
  call('SREM', KEY.pAll(prefix), id)
  return 1
end

local function pWake(prefix)
  call('PUBLISH', KEY.pWake(prefix), '1')
end

-- A run of task `id` ended: when the task has a buffer-all backlog, its turn (the backlog's
-- earliest member, in p:staged) comes due at its occurrence, and the schedulers are woken, so
-- that the next run is released now rather than at the turn's next look (periodic-release
-- still checks that no run of the task is active).
local function pRunEnded(prefix, id)
  local turn = call('ZRANGE', KEY.pBacklog(prefix, id), 0, 0, 'WITHSCORES')
  if not turn[1] then return end
  if call('ZADD', KEY.pStaged(prefix), 'XX', 'CH', turn[2], turn[1]) == 1 then pWake(prefix) end
end

-- When the schedulers' current unbroken run began, as a claim or a release at `now` continues it:
-- one more than `grace` ms after the last (no replica claimed or released meanwhile: they were
-- down), or before the run began (the clock went back), begins a new run. The catch-up policy
-- applies only to occurrences already past the grace when the run began; one late only because
-- the schedulers are behind (more due than they plan and release) is submitted: they were busy,
-- not down.
local function pLive(prefix, now, grace)
  local key = KEY.pLive(prefix)
  local live = call('HMGET', key, 'since', 'at')
  local since, at = tonumber(live[1]), tonumber(live[2])
  if not since or not at or now - at > grace or now < since then since = now end
  call('HSET', key, 'since', since, 'at', now)
  return since
end
