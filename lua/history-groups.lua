--[[
  Adds to the queue's per-group history the runs each group ended, as one executor added them up
  over the last few seconds (lua/includes/history.lua, the dashboard's fairness view).

  KEYS[1] meta   (every key is built from ARGV[1])
  ARGV[1] key prefix
  ARGV[2] the counts: one MessagePack array of strings, group, runs ended, ...

  Returns the number of groups written.
]]
--- @include "includes/common"
--- @include "includes/clock"
--- @include "includes/history"

local f = ARGV[2]
addGroupHistory(ARGV[1], nowMs(), f)
return #cmsgpack.unpack(f) / 2
