--[[
  Pause on failure (a periodic task's `pauseOnFailure`): when a run of such a task fails for good
  (its retries used up), the task is disabled as periodic-enable disables it (its staged
  occurrences dropped, out of p:nextrun; a buffer-all backlog waits), with a note naming the run,
  and a periodic.paused event is raised in the same stream entry. A disabled task stays as it is.
]]
--- @include "includes/common"
--- @include "includes/periodic"
--- @export pPauseOnFailure

-- Pauses the tasks of failed runs `failures` ({ job id, task id, occurrence, error } each) that
-- ask for it. Returns the paused ones as { job id, task id, occurrence, note } each.
local function pPauseOnFailure(prefix, failures)
  local paused = {}
  for _, f in ipairs(failures) do
    local id, task = f[1], f[2]
    local tk = KEY.pTask(prefix, task)
    local t = call('HMGET', tk, 'pauseOnFailure', 'enabled')
    if t[1] == '1' and t[2] == '1' then
      local note = 'paused: run ' .. id .. ' failed'
      -- (the error's first line, cut at 200 bytes)
      if f[4] then note = note .. ': ' .. string.sub(string.match(tostring(f[4]), '^[^\n]*'), 1, 200) end
      pUnstage(prefix, task)
      call('HSET', tk, 'enabled', '0', 'note', note)
      call('ZREM', KEY.pNextrun(prefix), task)
      paused[#paused + 1] = { id, task, f[3], note }
    end
  end
  return paused
end
