--[[
  The packed group record: a group's state as one value of the `groups` hash, the fields of
  GROUP_FIELDS in that order, each a little-endian 32-bit integer:
    running  runs in progress (counted only while the group has a limit, see countsRunning)
    stuck    stuck jobs;  nr, nh, nl: lengths of its lists :r, :h, :l (see includes/take)
    cnt      counting scheme position;  turns: takes in its current turn
    limit    concurrency limit (0: none);  weight;  paused (0|1)
    ready    1 while it is listed in `rotation`
    rate     rate limit: most starts in any `per` ms (0: none);  per: its window (ms)
    logged   starts its rate log `g:<group>:rl` holds (see includes/rateLog)
  A group without a rate keeps the short record, the fields up to `ready` (its rate fields are
  0): the take and submit of plain jobs read and write no more than before rate limits existed.
  This include alone reads and writes records. Their format and the byte where each field
  begins are derived from GROUP_FIELDS as the library loads; decodeGroup, encodeGroup,
  unpackGroup and packGroup are the only code that lists the fields by position, in the order
  of CODEC_ORDER, and the library does not load when GROUP_FIELDS lists them otherwise.
]]
--- @include "includes/wire"
--- @include "includes/common"
--- @export GROUP_FORMAT, SHORT_FORMAT, SHORT_BYTES, eligibleState, decodeGroup, encodeGroup, unpackGroup
--- @export packGroup, addListLengths

-- The record's struct format, and the short record's format (the fields before `rate`, which
-- with `per` and `logged` ends the list) and length; what addListLengths checks: that a record has
-- no limit (the bytes of field limit), and is not paused and is listed (the bytes of fields paused
-- and ready, adjacent in CODEC_ORDER); where the lengths of a group's three lists begin and end
-- (nr, nh, nl, adjacent in CODEC_ORDER), and their format. All set as the library loads, by the
-- block below, whose own locals (in scope only there) spare the library's limit of locals.
local GROUP_FORMAT, SHORT_FORMAT, SHORT_BYTES
local LIMIT_FROM, FLAGS_FROM, LIMIT_TO, FLAGS_TO, NO_LIMIT, UNPAUSED_LISTED
local LISTS_AT, LISTS_END, LISTS_FORMAT
do
  -- The order the functions below list the fields in (their results and parameters).
  local CODEC_ORDER = { 'running', 'stuck', 'nr', 'nh', 'nl', 'cnt', 'turns', 'limit', 'weight', 'paused', 'ready', 'rate',
    'per', 'logged' }
  -- Bytes a field, its struct format, and the field values the lists-only update checks, as the
  -- bytes of the format (0 and 1; see addListLengths).
  local FIELD_BYTES, FIELD_FORMAT = 4, 'i4'
  local INT_BYTES = { [0] = '\0\0\0\0', [1] = '\1\0\0\0' }
  -- The byte where each field begins (by name).
  local FIELD_AT = {}
  GROUP_FORMAT = '<'
  for i = 1, #GROUP_FIELDS do
    if GROUP_FIELDS[i] == 'rate' then SHORT_FORMAT, SHORT_BYTES = GROUP_FORMAT, (i - 1) * FIELD_BYTES end
    GROUP_FORMAT = GROUP_FORMAT .. FIELD_FORMAT
    FIELD_AT[GROUP_FIELDS[i]] = (i - 1) * FIELD_BYTES + 1
    if GROUP_FIELDS[i] ~= CODEC_ORDER[i] or #GROUP_FIELDS ~= #CODEC_ORDER then
      -- (a library cannot call error() while it loads: reading an unknown name fails the load, and
      -- the message names it)
      local _ = GROUP_FIELDS_DISAGREE_WITH_CODEC_ORDER -- luacheck: ignore 113
    end
  end
  LIMIT_FROM, FLAGS_FROM = FIELD_AT.limit, FIELD_AT.paused
  LIMIT_TO, FLAGS_TO = LIMIT_FROM + FIELD_BYTES - 1, FLAGS_FROM + 2 * FIELD_BYTES - 1
  NO_LIMIT, UNPAUSED_LISTED = INT_BYTES[0], INT_BYTES[0] .. INT_BYTES[1]
  LISTS_AT = FIELD_AT.nr
  LISTS_END = LISTS_AT + 3 * FIELD_BYTES - 1
  LISTS_FORMAT = '<' .. FIELD_FORMAT .. FIELD_FORMAT .. FIELD_FORMAT
end

-- Whether a group may be picked now: not paused, under its limit (0: none), with runnable jobs
-- (`jobs`: the lengths of its lists together), and under its rate (0: none; a group whose log
-- holds `rate` starts is parked in `delayed` until its window frees, see includes/rateLog).
-- Fields as its record holds them (paused 0|1).
local function eligibleState(paused, limit, running, jobs, rate, logged)
  return paused == 0 and (limit == 0 or running < limit) and jobs > 0 and (rate == 0 or logged < rate)
end

-- Whether a group holds nothing worth storing: no jobs waiting or stuck, the default settings
-- (so no limit, no rate and no running count: see countsRunning), and no place in `rotation`
-- (listed false). Its state is then what decodeGroup gives for a group with no record: its
-- counting scheme starts a new cycle with its next jobs (the ratio matters only while jobs wait).
local function idleState(stuck, jobs, limit, weight, paused, listed, rate)
  return stuck == 0 and jobs == 0 and limit == 0 and weight == 1 and paused == 0 and not listed and rate == 0
end

-- The fields of record `r` (nil: a group with no record, the defaults), in CODEC_ORDER, paused
-- and ready as 0|1.
local function decodeGroup(r)
  if not r then return 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0 end
  if #r == SHORT_BYTES then
    local running, stuck, nr, nh, nl, cnt, turns, limit, weight, paused, ready = structUnpack(SHORT_FORMAT, r)
    return running, stuck, nr, nh, nl, cnt, turns, limit, weight, paused, ready, 0, 0, 0
  end
  return structUnpack(GROUP_FORMAT, r)
end

-- The record of a group's fields (in CODEC_ORDER; paused 0|1, listed in the rotation or not);
-- '' for a group with nothing of its own (idleState), to remove from the hash.
local function encodeGroup(running, stuck, nr, nh, nl, cnt, turns, limit, weight, paused, listed, rate, per, logged)
  if idleState(stuck, nr + nh + nl, limit, weight, paused, listed, rate) then return '' end
  if rate == 0 then
    return structPack(SHORT_FORMAT, running, stuck, nr, nh, nl, cnt, turns, limit, weight, paused, listed and 1 or 0)
  end
  return structPack(GROUP_FORMAT, running, stuck, nr, nh, nl, cnt, turns, limit, weight, paused, listed and 1 or 0, rate,
    per, logged)
end

-- The tables records are unpacked into (unpackGroup) are reused: the library keeps up to
-- POOLED_GROUPS of them across calls and a call hands them out in turn (from the first as each
-- call begins), which spares a new table, and its keys, for every group a call visits.
local POOLED_GROUPS = 2000
local groupPool, groupPoolNext = {}, 1
onBeginCall(function() groupPoolNext = 1 end)

-- A group's fields by name (paused and ready as booleans) from its record `v` (nil: none).
local function unpackGroup(v)
  local g = groupPool[groupPoolNext]
  if not g then
    g = {}
    if groupPoolNext <= POOLED_GROUPS then groupPool[groupPoolNext] = g end
  end
  groupPoolNext = groupPoolNext + 1
  -- (decodeGroup written out: one call fewer a group a submit visits)
  local running, stuck, nr, nh, nl, cnt, turns, limit, weight, paused, ready, rate, per, logged =
    0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0
  if v then
    if #v == SHORT_BYTES then
      running, stuck, nr, nh, nl, cnt, turns, limit, weight, paused, ready = structUnpack(SHORT_FORMAT, v)
    else
      running, stuck, nr, nh, nl, cnt, turns, limit, weight, paused, ready, rate, per, logged = structUnpack(GROUP_FORMAT, v)
    end
  end
  g.running, g.stuck, g.nr, g.nh, g.nl, g.cnt, g.turns, g.limit, g.weight, g.paused, g.ready =
    running, stuck, nr, nh, nl, cnt, turns, limit, weight, paused == 1, ready == 1
  g.rate, g.per, g.logged = rate, per, logged
  return g
end

-- The record of group `g` (what unpackGroup gives), or '' (see encodeGroup).
local function packGroup(g)
  -- (encodeGroup, written out, as for unpackGroup)
  local paused = g.paused and 1 or 0
  if idleState(g.stuck, g.nr + g.nh + g.nl, g.limit, g.weight, paused, g.ready, g.rate) then return '' end
  if g.rate == 0 then
    return structPack(SHORT_FORMAT, g.running, g.stuck, g.nr, g.nh, g.nl, g.cnt, g.turns, g.limit, g.weight, paused,
      g.ready and 1 or 0)
  end
  return structPack(GROUP_FORMAT, g.running, g.stuck, g.nr, g.nh, g.nl, g.cnt, g.turns, g.limit, g.weight, paused,
    g.ready and 1 or 0, g.rate, g.per, g.logged)
end

-- Record `r` with a, b, c added to the lengths of its lists :r, :h, :l, rewritten in place; or
-- nil when the group has a limit, is paused or is not listed, whose update takes more than that
-- (see flushGroups).
local function addListLengths(r, a, b, c)
  if stringSub(r, LIMIT_FROM, LIMIT_TO) ~= NO_LIMIT or stringSub(r, FLAGS_FROM, FLAGS_TO) ~= UNPAUSED_LISTED then return nil end
  local nr, nh, nl = structUnpack(LISTS_FORMAT, r, LISTS_AT)
  return stringSub(r, 1, LISTS_AT - 1) .. structPack(LISTS_FORMAT, nr + a, nh + b, nl + c) .. stringSub(r, LISTS_END + 1)
end
