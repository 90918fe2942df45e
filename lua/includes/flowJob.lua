--[[
  Writing a job of a flow (FLOW_RECORD: the submit fields, then how many children it waits for
  and its failure policy as a child): a job with children is written `waiting-children` with its
  child counts at zero, in no list; any other is enqueued in its group's list as a submit does. A
  failure policy other than `fail` is kept in the job's hash (FLOW_FIELDS.policy), read when the
  job fails (includes/children).
]]
--- @include "includes/wire"
--- @include "includes/common"
--- @include "includes/changes"
--- @include "includes/addJob"
--- @include "includes/waitIndex"
--- @export writeFlowJob

-- Where the flow's own fields lie in a record, past the job's offset.
local AT_CHILDREN, AT_POLICY
for k = 1, #FLOW_RECORD do
  if FLOW_RECORD[k] == 'children' then AT_CHILDREN = k elseif FLOW_RECORD[k] == 'policy' then AT_POLICY = k end
end

-- Writes the flow job at f[i + 1 .. i + FLOW_WIDTH] under `jobKey` unless it exists (`unchecked`:
-- the caller knows it does not), its list push in `batch`. Returns 1 when written, 0 when it existed.
local function writeFlowJob(prefix, batch, jobKey, submitted, f, i, unchecked)
  local children = f[i + AT_CHILDREN]
  local waits = children ~= ''
  if writeJob(jobKey, submitted, f, i, waits and WAITING_CHILDREN or nil, unchecked) == 0 then return 0 end
  local id = f[i + AT_ID]
  if waits then
    call('HSET', jobKey, CHILD_FIELDS.total, children, CHILD_FIELDS.running, '0', CHILD_FIELDS.success, '0',
      CHILD_FIELDS.failed, '0', CHILD_FIELDS.cancelled, '0')
    changed(id, WAITING_CHILDREN)
    waitIndex.add(prefix, id, jobKey, submitted)
  else
    enqueueLater(prefix, batch, id, f[i + AT_GROUP], f[i + AT_PRIORITY] == 'high')
  end
  local policy = f[i + AT_POLICY]
  if policy ~= '' then call('HSET', jobKey, FLOW_FIELDS.policy, policy) end
  return 1
end
