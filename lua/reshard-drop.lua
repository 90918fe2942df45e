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
if call('EXISTS', prefix .. 'moving', prefix .. 'reshard:kept') > 0 then return 'jobs being moved' end
local records = call('HGETALL', prefix .. 'groups')
for i = 1, #records, 2 do
  if records[i] ~= GROUPS_PAD_FIELD then
    local _, stuck, nr, nh, nl = decodeGroup(records[i + 1])
    if stuck + nr + nh + nl > 0 then return 'jobs of group "' .. records[i] .. '"' end
  end
end
for _, member in ipairs(call('ZRANGE', prefix .. 'delayed', '0', '-1')) do
  if stringSub(member, 1, 1) ~= GROUP_DUE_MARK then return 'delayed or stuck jobs' end
end
for _, state in ipairs({ 'success', 'failed', 'cancelled' }) do
  if call('ZCARD', prefix .. 'done:' .. state) > 0 then return state .. ' jobs' end
end
if call('ZCARD', prefix .. 'waiting-children') > 0 then return 'jobs waiting for children' end
if call('ZCARD', prefix .. 'fanouts') > 0 then return 'fan-out children not submitted' end
local runs = false
leasedJobs(prefix, function() runs = true end)
if runs then return 'runs in progress' end

local keys = {}
for i = 1, #records, 2 do
  local g = prefix .. 'g:' .. records[i]
  if records[i] ~= GROUPS_PAD_FIELD then
    keys[#keys + 1], keys[#keys + 2], keys[#keys + 3], keys[#keys + 4] = g .. ':h', g .. ':l', g .. ':r', g .. ':rl'
  end
end
for _, id in ipairs(call('ZRANGE', prefix .. 'workers', '0', '-1')) do keys[#keys + 1] = prefix .. 'w:' .. id end
for _, name in ipairs({ 'meta', 'rotation', 'seq', 'marker', 'delayed', 'leases', 'counts', 'groups', 'limited', 'events',
  'workers', 'fanouts', 'waiting-children', 'done:success', 'done:failed', 'done:cancelled', 'tally' }) do
  keys[#keys + 1] = prefix .. name
end
for k = 1, #keys, 1000 do call('DEL', unpack(keys, k, math.min(#keys, k + 999))) end
return ''
