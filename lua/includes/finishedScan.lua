--[[
  Walking a finished-state set (done:<state>: job id -> finished time, ms) in bounded steps, for
  the operations that act on many finished jobs (clean, retry-failed). Each call visits at most
  a given number of members, oldest first, from a cursor, and answers the cursor of the next step.

  The cursor is (until, score, skip): members finished at or before `until` are visited, from
  score `score` on, past the first `skip` members of that score. Members a step acts on leave the
  set; the ones it keeps stay in place, and `skip` counts those of the last score visited, so
  the next step starts right after them. Members added meanwhile are newer than `until` (it is
  set by the first step), so a walk ends.
]]
--- @include "includes/common"
--- @export walkFinished

-- Visits the members of `key` from cursor (`until`, `score`, `skip`), at most `batch` of them,
-- calling act(job id, finished score) for each until it answers 'stop'; act answers true for a
-- member it took out of the set, false for one it kept. Returns the next cursor's score and
-- skip, or nil when the walk is over (no member left, or act stopped it).
local function walkFinished(key, untilMs, score, skip, batch, act)
  local members = call('ZRANGEBYSCORE', key, score, untilMs, 'WITHSCORES', 'LIMIT', str(skip), str(batch))
  if #members == 0 then return nil end
  local lastScore = score
  local keptAtLast = skip
  for i = 1, #members, 2 do
    local s = members[i + 1]
    local took = act(members[i], s)
    if took == 'stop' then return nil end
    if s ~= lastScore then lastScore, keptAtLast = s, 0 end
    if not took then keptAtLast = keptAtLast + 1 end
  end
  if #members < 2 * batch then return nil end
  return lastScore, keptAtLast
end
