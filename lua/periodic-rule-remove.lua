--[[
  Removes an event rule: its record, its memberships in p:rules and p:ev:<event>, and its pending
  runs (the tasks of its owner, with their staged occurrences and run history).

  KEYS[1] p:rules  (every key is built from ARGV[1])
  ARGV[1] key prefix
  ARGV[2] rule id
  ARGV[3] owner of the rule's pending runs (`rule:<id>`)

  Returns 1 when the rule existed, 0 when not (nothing is changed then).
]]
--- @include "includes/periodic"

local prefix = ARGV[1]
local id = ARGV[2]
local rk = KEY.pRule(prefix, id)
local after = call('HGET', rk, 'after')
if not after then return 0 end
call('DEL', rk)
call('SREM', KEYS[1], id)
call('SREM', KEY.pEvent(prefix, after), id)
local ok = KEY.pOwner(prefix, ARGV[3])
for _, task in ipairs(call('SMEMBERS', ok)) do pRemove(prefix, task) end
call('DEL', ok)
return 1
