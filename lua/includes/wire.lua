--[[
  The values Lua and TypeScript share by position or by code (src/redis/wire.ts holds them for
  TypeScript). Library-level constants; no other file defines these names.
]]

-- The fields of a group's packed record, in order (see includes/groupRecord).
local GROUP_FIELDS = { 'running', 'stuck', 'nr', 'nh', 'nl', 'cnt', 'turns', 'limit', 'weight', 'paused', 'ready' }
-- Entries per job in a take's reply (see includes/take).
local TAKEN_WIDTH = 4
-- The marks of a run's lease member (see includes/leases).
local SCHEDULED_MARK, RUNNING_MARK, CANCEL_MARK = ':', '!', '?'
-- The job id of a member of `leases`: the token (digits), one mark, then the id.
local LEASE_ID_PATTERN = '^%d+[:!?](.*)$'
-- The fields of a job's description (its hash field `d`), in order; the args follow when present.
local DESCRIPTION = { 'task', 'group', 'priority', 'maxRetries', 'subject', 'submitter', 'maxRuntime', 'tracker', 'occurrence' }
-- The events stream's fields for changes with an error, and for failed periodic runs.
local EVENT_ERRORS_FIELD, EVENT_PERIODIC_FAILED_FIELD = 'b', 'p'
