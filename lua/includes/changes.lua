--[[
  The state changes of one script call, collected as they happen and flushed once
  (flushChanges): one entry in the events stream, and one HINCRBY of `counts` per state whose
  count changed.
]]
--- @include "includes/wire"
--- @include "includes/common"
--- @include "includes/periodicPause"
--- @export countDelta, changedList, changed, left, arrived, periodicFailed, timerFailed, childrenDone
--- @export periodicEnded, deduplicated, jobReleased, flushChanges, moreEvents

-- Collected state changes of one script call; flushed as one stream entry: the ids per state
-- (in the order states first occur), and the changes that carry an error. The lists per state
-- and the count changes are kept across calls and emptied in place as each call begins (a
-- state's list is in this call's order once it holds an id). A state's count grows by the ids
-- its list holds when the changes are flushed, and by the changes with an error as they come;
-- countDelta[state] is what else the call adds to (or takes from) a state's count.
local stateIds, stateOrder = {}, {}
local events = {}
local countDelta = {}

-- Failed runs of periodic tasks in this call: { job id, task id, occurrence, error }; flushed in
-- the same stream entry (periodic.failed events users can alert on).
local periodicFailures = {}

-- Periodic tasks disabled in this call because their timer stopped advancing: { task id,
-- occurrence, error } (periodic.failed events with no job).
local timerFailures = {}

-- Periodic tasks that ended in this call (no occurrence left: past endAt, out of runs, a one-shot
-- done): task ids (periodic.ended events).
local periodicEnds = {}

-- Fan-out parents whose children all ended in this call: { parent id, total, success, failed,
-- cancelled } (see includes/children).
local childrenEnded = {}

-- Submits deduplicated in this call: { holder's id, its state, key, 1 replaced or 0 }
-- (see includes/dedup).
local deduplicates = {}

-- Jobs released from waiting-children in this call: { job id, why } (see includes/children).
local releases = {}

-- Entries of other kinds in this call (includes/batches): a list per EVENT_FIELD value, each
-- flushed as one JSON list in the same stream entry.
local moreEvents = {}

onBeginCall(function()
  for i = 1, #stateOrder do
    local state = stateOrder[i]
    -- a long list is let go (cjson walks the whole storage of a list it encodes)
    if #stateIds[state] > 32 then stateIds[state] = nil else clearList(stateIds[state]) end
  end
  clearList(stateOrder)
  if next(events) then events = {} end
  -- (cleared, not zeroed: every script's calls share the table, and a call walks only the
  -- states it counted, not every state any script has counted)
  for state in pairs(countDelta) do countDelta[state] = nil end
  if next(periodicFailures) then periodicFailures = {} end
  if next(childrenEnded) then childrenEnded = {} end
  if next(releases) then releases = {} end
  if next(timerFailures) then timerFailures = {} end
  if next(periodicEnds) then periodicEnds = {} end
  if next(deduplicates) then deduplicates = {} end
  if next(moreEvents) then moreEvents = {} end
end)

-- The list of ids that entered `state` in this call, for a caller about to add one or more
-- (a state listed with no id would be an empty field of the stream entry).
local function changedList(state)
  return callList(stateIds, stateOrder, state)
end

-- Job `id` entered `state` (with error `err`, for stuck and failed).
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

-- A job left `state`.
local function left(state)
  countDelta[state] = (countDelta[state] or 0) - 1
end

-- A job came in `state` from another shard of its queue (reshard-in.lua): counted, no event (its
-- state did not change).
local function arrived(state)
  countDelta[state] = (countDelta[state] or 0) + 1
end

local function periodicFailed(id, tracker, occurrence, err)
  periodicFailures[#periodicFailures + 1] = { id, tracker, tonumber(occurrence) or false, err or false }
end

local function timerFailed(task, occurrence, err)
  timerFailures[#timerFailures + 1] = { task, tonumber(occurrence) or false, err }
end

local function periodicEnded(task)
  periodicEnds[#periodicEnds + 1] = task
end

local function childrenDone(parent, total, success, failed, cancelled)
  childrenEnded[#childrenEnded + 1] = { parent, total, success, failed, cancelled }
end

local function deduplicated(id, state, key, replaced)
  deduplicates[#deduplicates + 1] = { id, state, key, replaced and 1 or 0 }
end

local function jobReleased(id, why)
  releases[#releases + 1] = { id, why }
end

-- The XADD argument list of flushChanges (reused: the library keeps it across calls).
local entry = { 'XADD', false, 'MAXLEN', '~', false, '*' }

-- Applies the count changes, and adds the stream entry (a field per state entered without an
-- error, = JSON [job id, ...]; the errors, failed periodic runs and parents whose children all
-- ended as JSON lists) unless the stream is off (`maxEvents` <= 0) or nothing changed.
local function flushChanges(prefix, maxEvents)
  -- (pauseOnFailure: the tasks of failed runs that ask for it are disabled in this call)
  local paused = #periodicFailures > 0 and pPauseOnFailure(prefix, periodicFailures) or EMPTY
  for i = 1, #stateOrder do
    local state = stateOrder[i]
    countDelta[state] = (countDelta[state] or 0) + #stateIds[state]
  end
  for state, d in pairs(countDelta) do
    if d ~= 0 then call('HINCRBY', KEY.counts(prefix), state, str(d)) end
  end
  if num(maxEvents) <= 0 or (#stateOrder == 0 and #events == 0 and #timerFailures == 0 and #periodicEnds == 0
    and #deduplicates == 0 and next(moreEvents) == nil) then
    return
  end
  local a, n = entry, 6
  a[2], a[5] = KEY.events(prefix), maxEvents
  for _, state in ipairs(stateOrder) do
    a[n + 1], a[n + 2], n = state, cjson.encode(stateIds[state]), n + 2
  end
  if #events > 0 then
    a[n + 1], a[n + 2], n = EVENT_FIELD.errors, cjson.encode(events), n + 2
  end
  if #periodicFailures > 0 then
    a[n + 1], a[n + 2], n = EVENT_FIELD.periodicFailed, cjson.encode(periodicFailures), n + 2
  end
  if #childrenEnded > 0 then
    a[n + 1], a[n + 2], n = EVENT_FIELD.childrenEnded, cjson.encode(childrenEnded), n + 2
  end
  if #releases > 0 then
    a[n + 1], a[n + 2], n = EVENT_FIELD.released, cjson.encode(releases), n + 2
  end
  if #timerFailures > 0 then
    a[n + 1], a[n + 2], n = EVENT_FIELD.timerFailed, cjson.encode(timerFailures), n + 2
  end
  if #periodicEnds > 0 then
    a[n + 1], a[n + 2], n = EVENT_FIELD.periodicEnded, cjson.encode(periodicEnds), n + 2
  end
  if #paused > 0 then
    a[n + 1], a[n + 2], n = EVENT_FIELD.periodicPaused, cjson.encode(paused), n + 2
  end
  if #deduplicates > 0 then
    a[n + 1], a[n + 2], n = EVENT_FIELD.deduplicated, cjson.encode(deduplicates), n + 2
  end
  for field, list in pairs(moreEvents) do
    a[n + 1], a[n + 2], n = field, cjson.encode(list), n + 2
  end
  call(unpack(a, 1, n))
end
