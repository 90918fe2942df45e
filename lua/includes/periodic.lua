--[[
  Helpers of the periodic scripts. Periodic keys below the queue prefix (see src/periodic/keys.ts):
    p:t:<id>        HASH  a periodic task
    p:nextrun       ZSET  enabled task id -> when a scheduler must look at it next (ms)
    p:all           SET   ids of tasks defined through upsert
    p:owner:<owner> SET   ids of an owner's tasks
    p:h:<id>        ZSET  run history: job id, '~skipped@<occ>' or '~missed@<first>@<count>@<last>'
                          -> occurrence (ms); a staged occurrence's job id is entered when it is
                          staged (its job is `planned` until the occurrence)
    p:wake          pub/sub channel schedulers listen on
]]

-- The p:nextrun scores of records' task ids (rec[1]), in record order, with one ZMSCORE per 1000.
local function pTokens(nextrunKey, recs)
  local scores = {}
  for k = 1, #recs, 1000 do
    local ids = {}
    for j = k, math.min(#recs, k + 999) do ids[#ids + 1] = recs[j][1] end
    local got = redis.call('ZMSCORE', nextrunKey, unpack(ids))
    for j = 1, #got do scores[k + j - 1] = got[j] end
  end
  return scores
end

-- Adds a record to a task's run history (trimmed when the task is claimed, see pTrimHistory).
local function pHistory(prefix, id, occurrence, member)
  redis.call('ZADD', prefix .. 'p:h:' .. id, occurrence, member)
end

-- Trims a task's run history to `keep` entries (-1: all) and `age` ms (-1: forever).
local function pTrimHistory(prefix, id, keep, age, now)
  local hk = prefix .. 'p:h:' .. id
  keep = tonumber(keep)
  if keep and keep >= 0 then redis.call('ZREMRANGEBYRANK', hk, 0, -(keep + 1)) end
  age = tonumber(age)
  if age and age >= 0 then redis.call('ZREMRANGEBYSCORE', hk, '-inf', '(' .. (now - age)) end
end

-- Removes a task and its indexes (not its jobs). Returns 1 when it existed.
local function pRemove(prefix, id)
  local tk = prefix .. 'p:t:' .. id
  local owner = redis.call('HGET', tk, 'owner')
  if not owner then return 0 end
  if owner ~= '' then redis.call('SREM', prefix .. 'p:owner:' .. owner, id) end
  redis.call('DEL', tk, prefix .. 'p:h:' .. id)
  redis.call('ZREM', prefix .. 'p:nextrun', id)
  redis.call('SREM', prefix .. 'p:all', id)
  return 1
end

local function pWake(prefix)
  redis.call('PUBLISH', prefix .. 'p:wake', '1')
end
