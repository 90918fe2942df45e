--[[
  Puts jobs taken out of another shard of the queue (reshard-out.lua) into this one, while the
  queue's shard count changes (rota reshard, src/queue/reshard.ts): each job's hash and logs as
  they were, and its place: the back of its group's list (`:h`, `:l`: as submit.lua adds a job;
  `:r`), or its set with its score (`delayed`: its due time; `waiting-children`: its submit time;
  `done:<state>`: its finished time);
  its group's counters and the state counts follow (no event: its state does not change), and
  its dedup key while it holds one (includes/dedup).
  A job already here (the same `submitted` and description: a step done before) is not added
  again. Nothing is written when another job holds one of the ids.

  KEYS[1] counts   (every key is built from ARGV[1])
  ARGV[1] key prefix
  ARGV[2] the jobs, one MessagePack array of strings: per job id, place, score ('' for a list),
          the number n of fields of its hash, its n field/value pairs, the number m of its log
          lines, its m log lines (oldest first), the number a of its attempts, its a attempts
          (newest first, see includes/attempts).

  Returns { jobs added, ids held by other jobs (nothing was written when there are any) }.
]]
--- @include "includes/common"
--- @include "includes/changes"
--- @include "includes/groupChanges"
--- @include "includes/addJob"
--- @include "includes/dedup"
--- @include "includes/reshard"

local prefix = ARGV[1]
local f = cmsgpack.unpack(ARGV[2])
local PLACES = { [':h'] = true, [':l'] = true, [':r'] = true, delayed = true, ['waiting-children'] = true,
  ['done:success'] = true, ['done:failed'] = true, ['done:cancelled'] = true }

-- Where each job begins in f, and which are not here yet.
local starts, fresh, held = {}, {}, {}
local i = 1
while i <= #f do
  if not PLACES[f[i + 1]] then return redis.error_reply('ERR reshard-in: unknown place "' .. tostring(f[i + 1]) .. '"') end
  starts[#starts + 1] = i
  local nf = tonumber(f[i + 3])
  local fields = i + 4
  local there = call('HMGET', KEY.job(prefix, f[i]), 'submitted', 'd')
  if there[1] or there[2] then
    local submitted, d
    for k = fields, fields + 2 * nf - 1, 2 do
      if f[k] == 'submitted' then submitted = f[k + 1] elseif f[k] == 'd' then d = f[k + 1] end
    end
    if there[1] ~= submitted or there[2] ~= d then held[#held + 1] = f[i] end
  else
    fresh[i] = true
  end
  local attempts = fields + 2 * nf + 1 + tonumber(f[fields + 2 * nf])
  i = attempts + 1 + tonumber(f[attempts])
end
if #held > 0 then return { 0, held } end

local batch = newJobBatch()
local added = 0
local now = nowMs()
for _, at in ipairs(starts) do
  if fresh[at] then
    local id, place, score, nf = f[at], f[at + 1], f[at + 2], tonumber(f[at + 3])
    local fields = at + 4
    local logs, m = fields + 2 * nf + 1, tonumber(f[fields + 2 * nf])
    local jobKey = KEY.job(prefix, id)
    local state, group
    for k = fields, fields + 2 * nf - 1, 2 do
      if f[k] == 'state' then state = f[k + 1] elseif f[k] == 'group' then group = f[k + 1] end
    end
    sendChunks('HSET', jobKey, f, fields + 2 * nf - 1, 1000, fields)
    if m > 0 then sendChunks('RPUSH', KEY.logs(prefix, id), f, logs + m - 1, 1000, logs) end
    local a = tonumber(f[logs + m])
    if a > 0 then sendChunks('RPUSH', KEY.attempts(prefix, id), f, logs + m + a, 1000, logs + m + 1) end
    arriveDedup(prefix, id, now)
    if place == ':h' or place == ':l' then
      enqueueLater(prefix, batch, id, group, place == ':h')
    else
      if place == ':r' then
        call('LPUSH', KEY.groupList(prefix, group, 'r'), id)
        deferGroup(group, 'nr', 1)
      else
        call('ZADD', jobSetKey(prefix, place), score, id)
      end
      if state == 'stuck' then deferGroup(group, 'stuck', 1) end
      arrived(state)
    end
    added = added + 1
  end
end
if flushJobs(prefix, batch) then wake(prefix) end
flushChanges(prefix, '0')
return { added, held }
