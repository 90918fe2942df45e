--[[
  What start.lua does for a run of a periodic task (a job with a `tracker`), as it starts:
  - copies the executor's host and pid from its registry entry onto the job (run history);
  - Nuntium's tolerance: when the task has a `tolerance` and its last run started less than
    `interval - tolerance` ago (interval: the timer's, or the distance between occurrences), the
    run is dropped: flagged cancelled with a `dropped` reason, so the executor does not call the
    handler and ends it `cancelled`. Otherwise the task's `lastrun` becomes now.
  Returns true when the run is dropped.
]]
--- @include "includes/common"
--- @export periodicStart
local function periodicStart(prefix, now, id, tracker, worker)
  local jobKey = KEY.job(prefix, id)
  if worker then
    local reg = call('GET', KEY.worker(prefix, worker))
    if reg then
      local ok, info = pcall(cjson.decode, reg)
      if ok and type(info) == 'table' and info.host then
        call('HSET', jobKey, 'host', tostring(info.host), 'pid', tostring(info.pid or ''))
      end
    end
  end
  local tk = KEY.pTask(prefix, tracker)
  local t = call('HMGET', tk, 'tolerance', 'lastrun', 'interval', 'period')
  if not t[1] then return false end
  if t[1] ~= '' and t[2] and t[2] ~= '' then
    local interval = tonumber((t[3] and t[3] ~= '') and t[3] or t[4])
    local since = now - tonumber(t[2])
    if interval and interval > 0 and since < interval - tonumber(t[1]) then
      call('HSET', jobKey, 'cancel', '1', 'dropped', 'dropped: started ' .. since ..
        ' ms after the previous run, less than interval - tolerance = ' .. (interval - tonumber(t[1])) .. ' ms')
      return true
    end
  end
  call('HSET', tk, 'lastrun', now)
  return false
end
