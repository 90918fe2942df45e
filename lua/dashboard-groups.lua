--[[
  The dashboard's groups page (src/dashboard/): the current record of each group of the page,
  its runs in progress and its oldest waiting job; and the runs in progress of every group (a
  group with runs and nothing waiting has no record: the page lists it from these). (Its fairness
  view reads the per-group history, src/dashboard/fairness.ts.) Read only.

  KEYS[1] groups   (every key is built from ARGV[1])
  ARGV[1] key prefix
  ARGV[2..] the page's group names

  Returns { now (ms), per page group { packed record or false, runs in progress, submitted time
            of its oldest waiting job or false, time its rate parks it until (ms) or false },
            { group, runs in progress, ... } }
  Flagged no-writes: it runs while Redis refuses writes (maxmemory reached, a replica).
]]
--- @flags no-writes
--- @include "includes/wire"
--- @include "includes/common"
--- @include "includes/leases"

local prefix = ARGV[1]
local now = nowMs()
local names = {}
for i = 2, #ARGV do names[#names + 1] = ARGV[i] end

-- (every run in progress is read: they are as many as the executors' slots, not as the jobs)
local running = runningByGroup(prefix)

local rows = {}
local records = #names > 0 and call('HMGET', KEY.groups(prefix), unpack(names)) or EMPTY
for i, name in ipairs(names) do
  local oldest = false
  for _, list in ipairs({ 'r', 'h', 'l' }) do
    local id = call('LINDEX', KEY.groupList(prefix, name, list), '-1')
    if id then
      local at = tonumber(call('HGET', KEY.job(prefix, id), 'submitted'))
      if at and (not oldest or at < oldest) then oldest = at end
    end
  end
  local parked = call('ZSCORE', KEY.delayed(prefix), GROUP_DUE_MARK .. name)
  rows[i] = { records[i], running[name] or 0, oldest, parked and tonumber(parked) or false }
end

local runs = {}
for group, n in pairs(running) do
  runs[#runs + 1] = group
  runs[#runs + 1] = n
end

return { now, rows, runs }
