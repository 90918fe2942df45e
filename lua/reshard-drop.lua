--[[
  Deletes a shard that its queue no longer has, once a reshard (rota reshard, see
  src/queue/reshard.ts) has moved every job out of it: its group records, lists and rate logs,
  its sets, counts, events stream, executor registry and schema. Nothing is deleted while it
  still holds a job (in a group list, `delayed`, a finished set, a run, or being moved).

  KEYS[1] meta   (every key is built from ARGV[1])
  ARGV[1] key prefix

  Returns '' when the shard was deleted, else what it still holds.
]]
--- @include "includes/wire"
--- @include "includes/common"
--- @include "includes/groupRecord"
--- @include "includes/groups"
--- @include "includes/leases"

local prefix = ARGV[1]
if call('EXISTS', KEY.moving(prefix), KEY.reshardKept(prefix)) > 0 then return 'jobs being moved' end
local records = call('HGETALL', KEY.groups(prefix))
for i = 1, #records, 2 do
  if records[i] ~= GROUPS_PAD_FIELD then
    local _, stuck, nr, nh, nl = decodeGroup(records[i + 1])
    if stuck + nr + nh + nl > 0 then return 'jobs of group "' .. records[i] .. '"' end
  end
end
for _, member in ipairs(call('ZRANGE', KEY.delayed(prefix), '0', '-1')) do
  if stringSub(member, 1, 1) ~= GROUP_DUE_MARK then return 'delayed or stuck jobs' end
end
for _, state in ipairs({ 'success', 'failed', 'cancelled' }) do
  if call('ZCARD', KEY.done(prefix, state)) > 0 then return state .. ' jobs' end
end
if call('ZCARD', KEY.waitingChildren(prefix)) > 0 then return 'jobs waiting for children' end
if call('ZCARD', KEY.fanouts(prefix)) > 0 then return 'fan-out children not submitted' end
local runs = false
leasedJobs(prefix, function() runs = true end)
if runs then return 'runs in progress' end

local keys = {}
for i = 1, #records, 2 do
  local g = records[i]
  if g ~= GROUPS_PAD_FIELD then
    keys[#keys + 1], keys[#keys + 2] = KEY.groupList(prefix, g, 'h'), KEY.groupList(prefix, g, 'l')
    keys[#keys + 3], keys[#keys + 4] = KEY.groupList(prefix, g, 'r'), KEY.rateLog(prefix, g)
  end
end
for _, id in ipairs(call('ZRANGE', KEY.workers(prefix), '0', '-1')) do keys[#keys + 1] = KEY.worker(prefix, id) end
for _, key in ipairs({ KEY.meta(prefix), KEY.rotation(prefix), KEY.seq(prefix), KEY.marker(prefix), KEY.delayed(prefix),
  KEY.leases(prefix), KEY.counts(prefix), KEY.groups(prefix), KEY.limited(prefix), KEY.events(prefix), KEY.workers(prefix),
  KEY.fanouts(prefix), KEY.waitingChildren(prefix), KEY.done(prefix, 'success'), KEY.done(prefix, 'failed'), KEY.done(prefix, 'cancelled'),
  KEY.tally(prefix) }) do
  keys[#keys + 1] = key
end
for k = 1, #keys, 1000 do call('DEL', unpack(keys, k, math.min(#keys, k + 999))) end
return ''
