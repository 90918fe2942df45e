--[[
  Creates or replaces a periodic task. Its next occurrence is kept when the timer and time zone
  are unchanged (re-deploying the same definitions never shifts or repeats a run, and occurrences
  already staged stay); otherwise it becomes ARGV[4] and staged occurrences are dropped. Enabled tasks are indexed in p:nextrun, and schedulers are woken.
  A task created with field `immediately` = '1' is triggered at once (as periodic-trigger does, at ARGV[6]).

  KEYS[1] p:nextrun  (every key is built from ARGV[1])
  ARGV[1] key prefix
  ARGV[2] task id
  ARGV[3] '1' to list the task in p:all (an upsert), '0' for an event rule's pending run
  ARGV[4] next occurrence for the new timer (ms), '' when the timer never elapses again
  ARGV[5] enabled '1' | '0'
  ARGV[6] now (ms; created/updated)
  ARGV[7] '' for a task definition. For an event rule's pending run, the event's time (ms): the
          run is due at ARGV[4] and replaces the subject's run due earlier. Nothing changes when
          the subject's newest run (pending, staged or released) is due at or after ARGV[4] (an
          older event arriving after a newer one). A replaced run that was staged is dropped with
          its planned job; one already released is not undone. Either way, when the event came
          before that run was due, its history records `~replaced@<its occurrence>@<ARGV[4]>`.
  ARGV[8..] field, value pairs (id, task, timer, timezone, owner, ... see definitionFields)

  Returns { 1 created | 0 replaced, next occurrence or '' }.
]]
--- @include "includes/wire"
--- @include "includes/periodic"
--- @include "includes/periodicClock"

local prefix = ARGV[1]
local id = ARGV[2]
local tk = KEY.pTask(prefix, id)
local fields = {}
local new = {}
for i = 8, #ARGV, 2 do
  fields[#fields + 1] = ARGV[i]
  fields[#fields + 1] = ARGV[i + 1]
  new[ARGV[i]] = ARGV[i + 1]
end
local old = call('HMGET', tk, 'timer', 'timezone', 'nextrun', 'owner')
local created = old[1] == false
local hk = KEY.pHistory(prefix, id)
if ARGV[7] ~= '' then
  -- the subject's newest run: pending (nextrun), or staged or released (the newest history entry)
  local top = call('ZREVRANGE', hk, 0, 0, 'WITHSCORES')
  local pendingDue, entered = tonumber(old[3] or ''), tonumber(top[2] or '')
  local newest = math.max(pendingDue or -1, entered or -1)
  if newest >= tonumber(ARGV[4]) then return { 0, old[3] or '' } end
  if entered and entered == newest and tonumber(ARGV[7]) < entered then
    call('ZADD', hk, top[2], HISTORY_MARK.replaced .. top[2] .. '@' .. ARGV[4])
  end
  -- a released run's history was left to expire: it is this task's again
  if created then call('PERSIST', hk) end
end
local nextrun = ARGV[4]
local sameTimer = not created and old[1] == new['timer'] and old[2] == new['timezone']
local kept = sameTimer and old[3] and old[3] ~= ''
if kept then nextrun = old[3] end
-- occurrences staged under another timer, or for a task now disabled, do not run
if not created and (not sameTimer or ARGV[5] ~= '1') then pUnstage(prefix, id) end
if old[4] and old[4] ~= '' and old[4] ~= new['owner'] then
  call('SREM', KEY.pOwner(prefix, old[4]), id)
end
if created then
  fields[#fields + 1] = 'created'
  fields[#fields + 1] = ARGV[6]
end
fields[#fields + 1] = 'nextrun'
fields[#fields + 1] = nextrun
if not kept then
  -- a next occurrence of the timer's own grid: no shift of the server's clock is in it
  -- (includes/periodicClock)
  local _, shift = pEpoch(prefix)
  fields[#fields + 1] = 'gs'
  fields[#fields + 1] = '0'
  fields[#fields + 1] = 'ss'
  fields[#fields + 1] = str(shift)
end
fields[#fields + 1] = 'enabled'
fields[#fields + 1] = ARGV[5]
local immediate = created and ARGV[3] == '1' and new['immediately'] == '1'
if immediate then
  fields[#fields + 1] = 'triggered'
  fields[#fields + 1] = ARGV[6]
end
call('HSET', tk, unpack(fields))
if new['owner'] and new['owner'] ~= '' then call('SADD', KEY.pOwner(prefix, new['owner']), id) end
if ARGV[3] == '1' then call('SADD', KEY.pAll(prefix), id) end
if immediate then
  call('ZADD', KEYS[1], tonumber(ARGV[6]), id)
  pWake(prefix)
elseif ARGV[5] == '1' and nextrun ~= '' then
  call('ZADD', KEYS[1], tonumber(nextrun), id)
  pWake(prefix)
else
  call('ZREM', KEYS[1], id)
end
return { created and 1 or 0, nextrun }
