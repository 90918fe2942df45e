--[[
  Creates or replaces an event rule: its record, and its membership in p:rules and in the
  p:ev:<event> set of the event it follows (leaving the set of the event it followed before).
  One call, so that concurrent calls for one id leave one rule whose record and memberships agree.

  KEYS[1] p:rules  (every key is built from ARGV[1])
  ARGV[1] key prefix
  ARGV[2] rule id
  ARGV[3] event it follows (after)
  ARGV[4] now (ms; `created` of a new rule)
  ARGV[5..] the record's other field, value pairs (delay, delayMs, task, group, args, ...)

  Returns the rule's record as stored: field, value pairs (HGETALL).
]]
--- @include "includes/periodic"

local prefix = ARGV[1]
local id = ARGV[2]
local after = ARGV[3]
local rk = KEY.pRule(prefix, id)
local old = call('HGET', rk, 'after')
if old and old ~= after then call('SREM', KEY.pEvent(prefix, old), id) end
local fields = { 'id', id, 'after', after }
for i = 5, #ARGV do fields[#fields + 1] = ARGV[i] end
call('HSET', rk, unpack(fields))
call('HSETNX', rk, 'created', ARGV[4])
call('SADD', KEY.pEvent(prefix, after), id)
call('SADD', KEYS[1], id)
return call('HGETALL', rk)
