--[[
  Shared helpers for Rota's scripts: Redis's functions in locals, numbers and their text, lists
  reused across calls, and the start of every call (beginCall). Every key a script touches starts
  with its shard's prefix (ARGV[1] in every script): `{rota:<queue>}:` for an unsharded queue,
  `{rota:<queue>:<i>}:` for shard i of a sharded one, so that each shard (not a sharded queue)
  lives in one Redis Cluster slot. The scripts name the keys with the builders of
  src/redis/keys.ts (KEY.job(prefix, id), expanded where it stands as the library is built).
  Key layout: docs/architecture.md
]]
--- @include "includes/wire"
--- @export call, structPack, structUnpack, stringSub, num, nowMs, str, clearList, callList, EMPTY
--- @export sendChunks, PAD, woken, wake, onBeginCall, beginCall

-- Redis's functions the scripts use most, in locals (an upvalue is reached for less than a
-- field of a global table); set as each call begins, since a library cannot reach them while
-- it loads.
local call, structPack, structUnpack, stringSub

-- The number a numeric argument stands for. tonumber of a string costs some 1,000 instructions
-- (strtod); the arguments that are settings (take size, lease, keep counts, counting scheme) come
-- again call after call, so their numbers are kept (at most 256 strings, then kept afresh) and
-- found for a tenth of that.
local numbers, numbersKept = {}, 0
local function num(s)
  local n = numbers[s]
  if n then return n end
  n = tonumber(s)
  if numbersKept == 256 then numbers, numbersKept = {}, 0 end
  numbers[s], numbersKept = n, numbersKept + 1
  return n
end

-- The server's time (ms). Its seconds change once a second: their number is kept with their text.
local lastSeconds, lastSecondsMs
local function nowMs()
  local t = call('TIME')
  if t[1] ~= lastSeconds then lastSeconds, lastSecondsMs = t[1], tonumber(t[1]) * 1000 end
  return lastSecondsMs + math.floor(tonumber(t[2]) / 1000)
end

-- The decimal string of integer n, for command arguments. Redis turns a Lua number argument into
-- text with snprintf("%.17g"), some 2,000 instructions a number; a string goes as it is. So every
-- number a script passes goes through here (constants are written as strings): small ones come
-- from a table the library keeps (filled as they occur), the last other one is kept (a script
-- passes the same time many times), and the rest are formatted as integers, which costs half of
-- "%.17g".
local smallInts = {}
local lastNumber, lastString
local function str(n)
  local s = smallInts[n]
  if s then return s end
  if n ~= lastNumber then
    lastNumber, lastString = n, string.format('%d', n)
    if n >= -1000 and n <= 1000 then smallInts[n] = lastString end
  end
  return lastString
end

-- Empties list `t` in place (its storage is kept for the next call).
local function clearList(t)
  for i = #t, 1, -1 do t[i] = nil end
end

-- The list kept under `key` in `map` across calls (created on first use), with `key` appended to
-- `order` when the list gets its first entry of this call: the collections a script fills as it
-- goes, writes out in first-use order, and empties in place (clearList) for the next call.
local function callList(map, order, key)
  local t = map[key]
  if not t then
    t = {}
    map[key] = t
  end
  if t[1] == nil then order[#order + 1] = key end
  return t
end

-- An empty list (never written to).
local EMPTY = {}

-- Sends `command key` with entries first..n of list `a` (first: 1 unless given), `per` entries
-- per command.
local function sendChunks(command, key, a, n, per, first)
  for i = first or 1, n, per do call(command, key, unpack(a, i, math.min(n, i + per - 1))) end
end

-- Redis keeps small hashes and sorted sets as listpacks, flat lists (by default up to 512 hash
-- fields or 128 set members, of up to 64 bytes each) in which finding or placing an entry reads
-- every entry before it. A key holding one value longer than that is made a table (a hash) or a
-- skiplist (a sorted set) on its first write, and Redis never turns it back into a list: the
-- busy keys of a queue hold such a pad, which their readers skip.
local PAD = '-----------------------------------------------------------------'

-- Wakes one idle executor (its BZPOPMIN on `marker` returns); once per script call is enough.
local woken = false
local function wake(prefix)
  if woken then return end
  woken = true
  call('ZADD', KEY.marker(prefix), '0', WAKE_MEMBER)
end

-- What the includes reset as each call begins (onBeginCall adds to it as the library loads).
local callResets = {}

-- Has `reset` run as each script call begins, to empty what the last call collected.
local function onBeginCall(reset)
  callResets[#callResets + 1] = reset
end

-- Starts a script call. The scripts are functions of one library (see src/redis/library.ts), so
-- what the includes define lives across calls: what one call collects (state changes, deferred
-- group and set writes, whether it woke an executor, ...) starts afresh.
local function beginCall()
  call, structPack, structUnpack, stringSub = redis.call, struct.pack, struct.unpack, string.sub
  woken = false
  for i = 1, #callResets do callResets[i]() end
end
