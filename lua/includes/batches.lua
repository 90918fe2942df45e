--[[
  Batches (docs/jobs.md#batches): jobs added over time to a batch (lua/batch.lua), which counts
  them in its hash `bt:<batch id>` (BATCH: total, pending, one count per final state, the times it
  was opened, closed, completed and succeeded, its callbacks) and lists their ids in
  `btj:<batch id>`. A batch job carries its batch's id in its description (DESCRIPTION's `batch`),
  so the executor flags the runs of batch jobs to finish.lua (other runs cost nothing), and the
  slow paths (cancel, delete, recover, retry) read it from the description they read anyway.

  The scripts that end a batch job note it (batches.ended: pending - 1, its final state's count
  + 1), those that put a failed or cancelled one back note that (batches.reopened), and
  batches.flush applies the changes of a call, one HINCRBY per batch and count; then
  batches.settle submits what is due, in the same call: once the batch is closed and no job of it
  is pending, its onComplete callback (once: `completed` is set with it) and, when every job
  succeeded, its onSuccess callback (once: `succeeded`). A callback is a job `<batch id>/complete`
  or `<batch id>/success`, packed by the producer at open as a one-job submit list, written unless
  its id exists; an event entry `batch` says which fired, with the counts.

  A batch's keys live in the batch's shard (its id is a Rota-made id naming its bucket), and so do
  its jobs, whatever their groups: every step is one slot's script. A batch whose hash is gone
  (its TTL ran out) is not written again.
]]
--- @include "includes/wire"
--- @include "includes/common"
--- @include "includes/changes"
--- @include "includes/groupChanges"
--- @include "includes/addJob"
--- @export batches

local batches = {}
do
  -- Where the batch id lies in a description.
  local at = 0
  for i = 1, #DESCRIPTION do
    if DESCRIPTION[i] == 'batch' then at = i end
  end
  -- The count of each final state.
  local count = { success = BATCH.success, failed = BATCH.failed, cancelled = BATCH.cancelled }
  -- The count changes of this call per batch ({ field -> delta }), in first-change order.
  local state = { deltas = {}, order = {} }
  onBeginCall(function()
    if state.order[1] ~= nil then
      state.deltas = {}
      clearList(state.order)
    end
  end)

  local function delta(id, field, d)
    local deltas = state.deltas[id]
    if not deltas then
      deltas = {}
      state.deltas[id] = deltas
      state.order[#state.order + 1] = id
    end
    deltas[field] = (deltas[field] or 0) + d
  end

  local function picked(ok, ...)
    if not ok then return nil end
    local v = select(at + 1, ...)
    if type(v) == 'string' then return v end
    return nil
  end

  -- The batch id in description `d` (the job hash's field), or nil: none, or it does not decode.
  function batches.of(d)
    if not d then return nil end
    return picked(pcall(cmsgpack.unpack_limit, d, at, 1))
  end

  -- The runs of batch jobs of a finish call (finish.lua ARGV[16], flat: run number, batch id) as
  -- run number -> batch id.
  function batches.runs(list)
    local flat, runs = cmsgpack.unpack(list), {}
    for k = 1, #flat, 2 do runs[tonumber(flat[k])] = flat[k + 1] end
    return runs
  end

  -- A job of batch `id` (nil: none) ended in `ended`; a state that is not final changes nothing.
  function batches.ended(id, ended)
    local field = id and count[ended]
    if not field then return end
    delta(id, BATCH.pending, -1)
    delta(id, field, 1)
  end

  -- A job of batch `id` (nil: none) left final state `from` (retried): it is pending again.
  function batches.reopened(id, from)
    local field = id and count[from]
    if not field then return end
    delta(id, BATCH.pending, 1)
    delta(id, field, -1)
  end

  -- Submits the callback packed in field `field` of batch hash `key`, when it has one.
  local function submitCallback(prefix, key, field, nowS)
    local record = call('HGET', key, field)
    if not record then return end
    local f = cmsgpack.unpack(record)
    local jobs = newJobBatch()
    if writeJob(KEY.job(prefix, f[AT_ID]), nowS, f, 0) == 1 then
      enqueueLater(prefix, jobs, f[AT_ID], f[AT_GROUP], f[AT_PRIORITY] == 'high')
      if flushJobs(prefix, jobs) then wake(prefix) end
    end
  end

  -- Fires what batch `id` (hash `key`) has due: once closed with no job pending, its completion
  -- (onComplete) and, when all its jobs succeeded, its success (onSuccess); each once.
  function batches.settle(prefix, key, id, now)
    local b = call('HMGET', key, BATCH.closed, BATCH.pending, BATCH.completed, BATCH.succeeded, BATCH.total,
      BATCH.success, BATCH.failed, BATCH.cancelled)
    if not b[1] or tonumber(b[2]) > 0 then return end
    local total, s = tonumber(b[5]), tonumber(b[6])
    local nowS = str(now)
    local fired
    if not b[3] then
      call('HSET', key, BATCH.completed, nowS)
      call('ZREM', KEY.batches(prefix), id)
      submitCallback(prefix, key, BATCH.onComplete, nowS)
      fired = { { id, 'complete', total, s, tonumber(b[7]), tonumber(b[8]) } }
    end
    if not b[4] and s == total then
      call('HSET', key, BATCH.succeeded, nowS)
      submitCallback(prefix, key, BATCH.onSuccess, nowS)
      fired = fired or {}
      fired[#fired + 1] = { id, 'success', total, s, tonumber(b[7]), tonumber(b[8]) }
    end
    if fired then
      local list = moreEvents[EVENT_FIELD.batch]
      if not list then
        list = {}
        moreEvents[EVENT_FIELD.batch] = list
      end
      for k = 1, #fired do list[#list + 1] = fired[k] end
    end
  end

  -- Applies the count changes of this call, and fires what each batch has due (settle).
  function batches.flush(prefix, now)
    local order = state.order
    for i = 1, #order do
      local id = order[i]
      local key = KEY.batch(prefix, id)
      if call('EXISTS', key) == 1 then
        for field, d in pairs(state.deltas[id]) do
          if d ~= 0 then call('HINCRBY', key, field, str(d)) end
        end
        call('PEXPIRE', key, BATCH.ttl)
        call('PEXPIRE', KEY.batchJobs(prefix, id), BATCH.ttl)
        now = now or nowMs()
        batches.settle(prefix, key, id, now)
      end
    end
  end
end
