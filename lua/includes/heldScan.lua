--[[
  A step of the dashboard's sweep of the groups that hold jobs outside their lists: delayed jobs
  (in `delayed`) and finished ones (`done:failed`, `done:success`, `done:cancelled`). Such a
  group has no record in `groups` once nothing of it waits, and the groups page lists it from
  this sweep (src/dashboard/group-index.ts). Each step ZSCANs one set from a cursor, at most
  about `count` members (ZSCAN's COUNT), and reads the group of each job it meets.

  The cursor is `<set number>:<ZSCAN cursor>` ('0' starts a round, and is answered when the
  round went through every set).
]]
--- @include "includes/wire"
--- @include "includes/common"
--- @export heldStep

-- (the sets scanned: `delayed`, then `done:<state>` of these states)
local HELD_SETS = { 'delayed', 'failed', 'success', 'cancelled' }

-- One step from `cursor`: answers the next cursor and the groups met (each once), as a flat list.
local function heldStep(prefix, cursor, count)
  local set, at = string.match(cursor, '^(%d+):(%d+)$')
  set = tonumber(set) or 1
  at = at or '0'
  if set < 1 or set > #HELD_SETS then set, at = 1, '0' end
  local key = set == 1 and KEY.delayed(prefix) or KEY.done(prefix, HELD_SETS[set])
  local r = call('ZSCAN', key, at, 'COUNT', count)
  local seen, groups = {}, {}
  local members = r[2]
  for i = 1, #members, 2 do
    local id = members[i]
    if stringSub(id, 1, 1) ~= GROUP_DUE_MARK then
      local group = call('HGET', KEY.job(prefix, id), 'group')
      if group and not seen[group] then
        seen[group] = true
        groups[#groups + 1] = group
      end
    end
  end
  local nextCursor
  if r[1] ~= '0' then
    nextCursor = set .. ':' .. r[1]
  elseif set < #HELD_SETS then
    nextCursor = (set + 1) .. ':0'
  else
    nextCursor = '0'
  end
  return nextCursor, groups
end
