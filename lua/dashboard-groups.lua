--[[
  The dashboard's groups page (src/dashboard/): the current record of each group of the page,
  its runs in progress and its oldest waiting job; the runs in progress of every group (a group
  with runs and nothing waiting has no record: the page lists it from these); and the groups that
  recent takes served (the fairness view), from the newest entries of the events stream that hold
  state changes (progress entries are passed over). Read only.

  KEYS[1] groups   (every key is built from ARGV[1])
  ARGV[1] key prefix
  ARGV[2] most events entries read for the fairness view (0: none)
  ARGV[3] most takes counted for it
  ARGV[4..] the page's group names

  Returns { now (ms), per page group { packed record or false, runs in progress, submitted time
            of its oldest waiting job or false, time its rate parks it until (ms) or false },
            { group, takes, ... }, takes counted,
            time of the oldest entry read (ms) or false, { group, runs in progress, ... } }
  Flagged no-writes: it runs while Redis refuses writes (maxmemory reached, a replica).
]]
--- @flags no-writes
--- @include "includes/wire"
--- @include "includes/common"
--- @include "includes/leases"

local prefix = ARGV[1]
local now = nowMs()
local names = {}
for i = 4, #ARGV do names[#names + 1] = ARGV[i] end

-- (every run in progress is read: they are as many as the executors' slots, not as the jobs)
local running = runningByGroup(prefix)

local rows = {}
local records = #names > 0 and call('HMGET', prefix .. 'groups', unpack(names)) or EMPTY
for i, name in ipairs(names) do
  local oldest = false
  for _, list in ipairs({ ':r', ':h', ':l' }) do
    local id = call('LINDEX', prefix .. 'g:' .. name .. list, '-1')
    if id then
      local at = tonumber(call('HGET', prefix .. 'j:' .. id, 'submitted'))
      if at and (not oldest or at < oldest) then oldest = at end
    end
  end
  local parked = call('ZSCORE', prefix .. 'delayed', GROUP_DUE_MARK .. name)
  rows[i] = { records[i], running[name] or 0, oldest, parked and tonumber(parked) or false }
end

local shares, takes, since = {}, 0, false
local byGroup = {}
-- Entries are read ten at a time, newest first, until enough takes were counted, ARGV[2]
-- entries with state changes or FAIRNESS_BYTES of their fields were read: a bulk submit's entry
-- lists a thousand ids, and those are not takes. Progress entries (a running job's progress,
-- many a second) are no state change: they are passed over, up to FAIRNESS_PASSED of them.
local FAIRNESS_BYTES = 262144
local wanted, most = tonumber(ARGV[2]), tonumber(ARGV[3])
local FAIRNESS_PASSED = 10 * wanted
local seen, passed, bytes, from = 0, 0, 0, '+'
while seen < wanted and passed < FAIRNESS_PASSED and takes < most and bytes < FAIRNESS_BYTES do
  local entries = call('XREVRANGE', prefix .. 'events', from, '-', 'COUNT', '10')
  if #entries == 0 then break end
  for _, item in ipairs(entries) do
    local fields = item[2]
    from = '(' .. item[1]
    if #fields == 2 and fields[1] == EVENT_PROGRESS_FIELD then
      passed = passed + 1
    else
      seen = seen + 1
      since = tonumber(string.match(item[1], '^(%d+)'))
    end
    for k = 1, #fields, 2 do
      bytes = bytes + #fields[k + 1]
      if fields[k] == 'scheduled' then
        for _, id in ipairs(cjson.decode(fields[k + 1])) do
          local group = call('HGET', prefix .. 'j:' .. id, 'group')
          if group then
            byGroup[group] = (byGroup[group] or 0) + 1
            takes = takes + 1
          end
        end
      end
    end
  end
end
for group, n in pairs(byGroup) do
  shares[#shares + 1] = group
  shares[#shares + 1] = n
end

local runs = {}
for group, n in pairs(running) do
  runs[#runs + 1] = group
  runs[#runs + 1] = n
end

return { now, rows, shares, takes, since, runs }
