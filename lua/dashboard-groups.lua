--[[
  The dashboard's groups page (src/dashboard/): the current record of each group of the page,
  its runs in progress and its oldest waiting job; and the groups that recent takes served (the
  fairness view), from the newest entries of the events stream. Read only.

  KEYS[1] groups   (every key is built from ARGV[1])
  ARGV[1] key prefix
  ARGV[2] most events entries read for the fairness view (0: none)
  ARGV[3] most takes counted for it
  ARGV[4..] the page's group names

  Returns { now (ms), per page group { packed record or false, runs in progress, submitted time
            of its oldest waiting job or false }, { group, takes, ... }, takes counted,
            time of the oldest entry read (ms) or false }
  Flagged no-writes: it runs while Redis refuses writes (maxmemory reached, a replica).
]]
--- @flags no-writes
--- @include "includes/common"
--- @include "includes/leases"

local prefix = ARGV[1]
local now = nowMs()
local names = {}
for i = 4, #ARGV do names[#names + 1] = ARGV[i] end

local running = {}
if #names > 0 then running = runningByGroup(prefix) end

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
  rows[i] = { records[i], running[name] or 0, oldest }
end

local shares, takes, since = {}, 0, false
local byGroup = {}
-- Entries are read ten at a time, newest first, until enough takes were counted, ARGV[2]
-- entries or FAIRNESS_BYTES of their fields were read: a bulk submit's entry lists a thousand
-- ids, and those are not takes.
local FAIRNESS_BYTES = 262144
local wanted, most = tonumber(ARGV[2]), tonumber(ARGV[3])
local seen, bytes, from = 0, 0, '+'
while seen < wanted and takes < most and bytes < FAIRNESS_BYTES do
  local entries = call('XREVRANGE', prefix .. 'events', from, '-', 'COUNT', '10')
  if #entries == 0 then break end
  for _, item in ipairs(entries) do
    seen = seen + 1
    since = tonumber(string.match(item[1], '^(%d+)'))
    from = '(' .. item[1]
    local fields = item[2]
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

return { now, rows, shares, takes, since }
