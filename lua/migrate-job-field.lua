--[[
  One batch of a migration step that rewrites a field of the job hashes (rota migrate,
  src/queue/migrate.ts): for each job named whose hash holds field `from`, writes its value to
  field `to` unless that is there already (and with `move`, deletes `from`); then records the
  step's progress in the shard's `meta` hash, and on its last batch the schema it leads to. The
  batch runs only when the shard is where the caller read it: at schema `fromSchema` with no step
  under way and cursor '0' (the step begins), or in this step at cursor `cursor`. So a batch
  repeated after a kill, or sent by a second migrate, writes nothing; a job gone meanwhile is
  skipped, and one rewritten already is not counted again.

  KEYS[1] meta   (the job keys are built from ARGV[1])
  ARGV[1] key prefix
  ARGV[2] the schema the step leads from
  ARGV[3] the schema it leads to
  ARGV[4] the oldest build schema that reads data of the schema it leads to (META.compat)
  ARGV[5] the SCAN cursor the batch was read from ('0': the step's first batch)
  ARGV[6] the cursor to go on from ('0': this is the step's last batch)
  ARGV[7] the job ids of the batch: one MessagePack array of strings
  ARGV[8] field to read
  ARGV[9] field to write
  ARGV[10] 'move' (delete the field read) or 'copy'

  Returns { MIGRATE_BATCH.ok, records rewritten by the step so far, 1 when the step is complete
  else 0 }; { MIGRATE_BATCH.stale, schema, step } when the shard is at another schema or step;
  { MIGRATE_BATCH.moved, cursor } when the step is at another cursor. Only `ok` wrote anything.
]]
--- @include "includes/common"

local meta = KEYS[1]
local prefix, fromSchema, toSchema, compat = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local cursor, nextCursor = ARGV[5], ARGV[6]
local readField, writeField, move = ARGV[8], ARGV[9], ARGV[10] == 'move'

local state = call('HMGET', meta, META.schema, META.step, META.cursor, META.done)
local schema, step, at = state[1], state[2], state[3]
local done = tonumber(state[4]) or 0
if not step then
  if schema ~= fromSchema then return { MIGRATE_BATCH.stale, schema or '', '' } end
  if cursor ~= '0' then return { MIGRATE_BATCH.moved, '0' } end
elseif step ~= toSchema then
  return { MIGRATE_BATCH.stale, schema or '', step }
elseif at ~= cursor then
  return { MIGRATE_BATCH.moved, at or '' }
end

for _, id in ipairs(cmsgpack.unpack(ARGV[7])) do
  local jobKey = KEY.job(prefix, id)
  local value = call('HGET', jobKey, readField)
  if value then
    if call('HSETNX', jobKey, writeField, value) == 1 then done = done + 1 end
    if move then call('HDEL', jobKey, readField) end
  end
end

if nextCursor == '0' then
  call('HSET', meta, META.schema, toSchema, META.compat, compat)
  call('HDEL', meta, META.step, META.cursor, META.done)
  return { MIGRATE_BATCH.ok, done, 1 }
end
call('HSET', meta, META.step, toSchema, META.cursor, nextCursor, META.done, done)
return { MIGRATE_BATCH.ok, done, 0 }
