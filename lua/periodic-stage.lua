--[[
  Commits claimed periodic tasks' coming occurrences, ahead of time: per task, atomically, checks
  the claim (compare-and-set on the p:nextrun score the claim set; a valid token also means the
  task has not changed since the claim read it), stages a job per occurrence with the id
  `<task id>@<occurrence ms>` (so an occurrence can never be submitted twice), enters it in the run
  history, records missed occurrences, and advances the task's nextrun. A staged job is written in
  state `planned` (in no list and no count; readers treat it as absent) and entered in p:staged at
  its occurrence as `<overlap code><job id>|<h|l><group>` (the task's overlap policy, and where
  the job goes: its priority and group, so that releasing it needs no read of the job); at the
  occurrence periodic-release submits it or, by the overlap policy, skips it. Once committed, an
  occurrence no longer depends on the replica that committed it: any replica releases it.
  Work is batched: one ZMSCORE for the tokens, one ZADD per sorted set. A task whose timer stopped
  advancing (a record with a failure) is disabled instead, with the failure as its note, in its run
  history (`~failed@<occurrence>@<error>`) and as a periodic.failed event.

  KEYS[1] p:nextrun  (every key is built from ARGV[1])
  ARGV[1] key prefix
  ARGV[2] events stream cap (maxEvents; <= 0: no stream)
  ARGV[3..] one record per task: a MessagePack array of raw strings, the STAGE_FIELDS of
            src/redis/wire.ts in order (built by the scheduler from the claim; cmsgpack reads it):
            id, claim token, trigger time being served ('' if none), new nextrun ('' when the timer
            never elapses again), period (ms from the last occurrence to the next, for tolerance;
            '' leaves it), missed count, first missed, last missed, occurrences (comma-separated,
            ascending), then the task's fields as periodic-claim read them: overlap, rule, enabled,
            period, and the job fields task, group, args, subject, submitter, priority, maxRetries,
            maxRuntime; the failure ('' when none: else the error, and missed first is the
            occurrence the timer stopped at); then the schedule controls' part of the plan:
            excluded occurrences (comma-separated; recorded `~excluded@<occ>`), due times of the
            occurrences (comma-separated, in their order; '' when each is due at its occurrence:
            jitter makes them later, and the job records it as `jitterDue`), the task's scheduled runs
            counted so far ('' leaves it), '1' when the task ends with this plan (a periodic.ended
            event), the task's field `staged` as the claim read it (a valid token means it is
            still the task's: only a stage with the token, or a change that rewrites the score,
            writes it), and what the occurrences' job ids end with (`~<epoch>` for an interval
            task after a backward jump of the server's clock, includes/periodicClock; '' otherwise)

  Returns { earliest p:nextrun score afterwards ('' when none), earliest p:staged score ('' when
            none), per task 1 (committed) or 0 (claim gone: committed elsewhere, changed or removed) }.
]]
--- @include "includes/common"
--- @include "includes/addJob"
--- @include "includes/periodic"
--- @include "includes/changes"

local prefix = ARGV[1]
local maxEvents = ARGV[2]
-- '' when absent
local function opt(v) if v ~= '' then return v end end
local recs = {}
for i = 3, #ARGV do
  local f = cmsgpack.unpack(ARGV[i])
  if type(f) ~= 'table' or #f ~= #STAGE_FIELDS then
    return redis.error_reply('ERR periodic-stage: a record must be an array of ' .. #STAGE_FIELDS .. ' strings')
  end
  local rec = {}
  for k, field in ipairs(STAGE_FIELDS) do rec[field] = f[k] end
  recs[#recs + 1] = rec
end

local scores = pTokens(KEYS[1], recs)
local results = {}
local staged, nextAdds, nextRems = {}, {}, {}
for r = 1, #recs do
  local f = recs[r]
  local id, token, triggered, newNext, period = f.id, f.token, f.triggered, f.nextrun, f.period
  if not scores[r] or tonumber(scores[r]) ~= tonumber(token) then
    results[r] = 0
  elseif f.failure ~= '' then
    results[r] = 1
    local at = f.missedFirst
    call('ZADD', KEY.pHistory(prefix, id), at, HISTORY_MARK.failed .. at .. '@' .. f.failure)
    call('HSET', KEY.pTask(prefix, id), 'enabled', '0', 'note', f.failure)
    nextRems[#nextRems + 1] = id
    timerFailed(id, at, f.failure)
  else
    results[r] = 1
    local missed = tonumber(f.missed)
    local rule, enabled, storedPeriod = f.rule, f.enabled, f.storedPeriod
    -- an event rule's pending-run task goes once its last run is released: an upper-case code
    -- tells the release so (until then a newer event can still replace the staged run)
    local gone = newNext == '' and rule ~= ''
    local code = OVERLAP_CODE[f.overlap] or OVERLAP_CODE.skip
    if gone then code = string.upper(code) end
    local members, history = {}, {}
    local route = '|' .. (f.priority == 'high' and 'h' or 'l') .. f.group
    if f.occurrences ~= '' then
      local description = {
        task = f.task, group = f.group, priority = f.priority, maxRetries = tonumber(f.maxRetries),
        subject = opt(f.subject), submitter = opt(f.submitter), maxRuntime = tonumber(f.maxRuntime), tracker = id,
      }
      local dues = {}
      for due in string.gmatch(f.dues, '[^,]+') do dues[#dues + 1] = due end
      local k = 0
      for occ in string.gmatch(f.occurrences, '[^,]+') do
        k = k + 1
        -- (a trigger's run keeps the id its trigger answered)
        local jobId = id .. '@' .. occ .. (occ == triggered and '' or f.idSuffix)
        description.occurrence = tonumber(occ)
        local d = packDescription(description, f.args)
        local due = dues[k]
        if due == occ then due = nil end
        if stageJob(prefix, { id = jobId, description = d, group = f.group, priority = f.priority, tracker = id, occurrence = occ, due = due }) then
          local member = code .. jobId .. route
          members[#members + 1] = member
          staged[#staged + 1] = due or occ
          staged[#staged + 1] = member
          history[#history + 1] = occ
          history[#history + 1] = jobId
        end
      end
    end
    if missed > 0 then
      history[#history + 1] = f.missedFirst
      history[#history + 1] = HISTORY_MARK.missed .. f.missedFirst .. '@' .. missed .. '@' .. f.missedLast
    end
    for occ in string.gmatch(f.excluded, '[^,]+') do
      history[#history + 1] = occ
      history[#history + 1] = HISTORY_MARK.excluded .. occ
    end
    if #history > 0 then call('ZADD', KEY.pHistory(prefix, id), unpack(history)) end
    local fields = { 'nextrun', newNext }
    if f.runs ~= '' then fields[#fields + 1] = 'runs'; fields[#fields + 1] = f.runs end
    if f.ended == '1' then periodicEnded(id) end
    if period ~= '' and period ~= storedPeriod then fields[#fields + 1] = 'period'; fields[#fields + 1] = period end
    if triggered ~= '' then fields[#fields + 1] = 'triggered'; fields[#fields + 1] = '' end
    local tk = KEY.pTask(prefix, id)
    -- `staged` lists the task's unreleased occurrences (for pUnstage): this stage's and those
    -- of earlier stages still waiting
    local before = f.staged
    if before ~= '' then
      local olds = {}
      for m in string.gmatch(before, '[^,]+') do olds[#olds + 1] = m end
      local present = call('ZMSCORE', KEY.pStaged(prefix), unpack(olds))
      for i = #olds, 1, -1 do
        if present[i] then table.insert(members, 1, olds[i]) end
      end
    end
    if gone and #members == 0 then
      -- nothing of the rule's run is left to release (its occurrence was missed)
      pRemove(prefix, id, true)
    else
      if #members > 0 or before ~= '' then fields[#fields + 1] = 'staged'; fields[#fields + 1] = table.concat(members, ',') end
      call('HSET', tk, unpack(fields))
    end
    if newNext ~= '' and enabled == '1' then
      nextAdds[#nextAdds + 1] = newNext
      nextAdds[#nextAdds + 1] = id
    else
      nextRems[#nextRems + 1] = id
    end
  end
end
for k = 1, #staged, 1000 do call('ZADD', KEY.pStaged(prefix), unpack(staged, k, math.min(#staged, k + 999))) end
for k = 1, #nextAdds, 1000 do call('ZADD', KEYS[1], unpack(nextAdds, k, math.min(#nextAdds, k + 999))) end
for k = 1, #nextRems, 1000 do call('ZREM', KEYS[1], unpack(nextRems, k, math.min(#nextRems, k + 999))) end
flushChanges(prefix, maxEvents)
local firstNext = call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
local firstStaged = call('ZRANGE', KEY.pStaged(prefix), 0, 0, 'WITHSCORES')
return { firstNext[2] or '', firstStaged[2] or '', results }
