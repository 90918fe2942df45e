--[[
  Delivers the ends (and re-opens) of children in another queue to their parents in this one
  (their queue's `xend` outbox, relayed by src/queue/cross.ts): each as the end of a local child
  (counts, failure policy, the waiter's release, children-ended), refused when that child's
  number (its CROSS.seq) is not above the last one delivered (includes/children cross.deliver):
  a repeat or a late, older entry changes nothing.

  KEYS[1] meta   (every key is built from ARGV[1])
  ARGV[1] key prefix
  ARGV[2] events stream max length
  ARGV[3..] entries: MessagePack { parent's queue ref, child id, seq, state or 'open', policy }

  Returns how many were applied.
]]
--- @include "includes/common"
--- @include "includes/changes"
--- @include "includes/children"

local prefix = ARGV[1]
local applied = 0
cross.policy = {}
for i = 3, #ARGV do
  local e = cmsgpack.unpack(ARGV[i])
  applied = applied + cross.deliver(prefix, e[2], tonumber(e[3]), e[4], e[5])
end
flushChildren(prefix, nowMs())
flushChanges(prefix, ARGV[2])
return applied
