--[[
  Why a waiting job waits, for its page in the dashboard (src/dashboard/): where it stands in its
  group's lists, and the group's state (its record, its runs in progress, and the time its rate
  parks it until). The job is looked for from the end that takes come from (RPOP), at most
  ARGV[4] entries of each list (LPOS MAXLEN), so a request never reads a whole long list. Read only.

  KEYS[1] groups   (every key is built from ARGV[1])
  ARGV[1] key prefix
  ARGV[2] job id
  ARGV[3] group
  ARGV[4] most entries of a list looked at

  Returns { now (ms), list the job is in ('r', 'h', 'l', or '' when not found within ARGV[4]
            entries of each), its place in that list (1: taken next), the lengths of lists
            :r, :h and :l, the group's packed record or false, its runs in progress, the time
            (ms) its rate parks it until or false }
  Flagged no-writes: it runs while Redis refuses writes (maxmemory reached, a replica).
]]
--- @flags no-writes
--- @include "includes/wire"
--- @include "includes/common"
--- @include "includes/leases"

local prefix = ARGV[1]
local id, group = ARGV[2], ARGV[3]
local most = ARGV[4]
local now = nowMs()

local lengths = {}
local found, place = '', 0
for i, list in ipairs({ 'r', 'h', 'l' }) do
  local key = KEY.groupList(prefix, group, list)
  lengths[i] = call('LLEN', key)
  if found == '' and lengths[i] > 0 then
    -- (RANK -1: from the tail, where takes pop; the index is still counted from the head)
    local at = call('LPOS', key, id, 'RANK', '-1', 'MAXLEN', most)
    if at then found, place = list, lengths[i] - at end
  end
end

local record = call('HGET', KEY.groups(prefix), group)
local running = runningByGroup(prefix, group)[group] or 0
local parked = call('ZSCORE', KEY.delayed(prefix), GROUP_DUE_MARK .. group)
if parked then parked = tonumber(parked) end

return { now, found, place, lengths, record or false, running, parked or false }
