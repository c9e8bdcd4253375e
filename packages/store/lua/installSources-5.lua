--[[
  Installs the platform's answer for one user whose sources are not held (docs/semantics.md,
  "Where a user's sources live"): the answer's follows and topics with the changes recorded in
  the fetch marker on top (includes/recordedFollows.lua), the feed cursor from `readAt` and the
  notice cursor from `noticesSeen` where the user has none. A user held already keeps what they
  hold (another install won; changes since went to the lists). The marker is deleted either way.
  KEYS[1] authors  STRING  the authors the user follows, joined by ',' ('' when none: held)
  KEYS[2] topics   STRING  the topics the user follows, joined by ','
  KEYS[3] fetch    HASH    the fetch marker
  KEYS[4] cursors  HASH    ARGV[3] → the feed cursor
  KEYS[5] marks    HASH    seen → the notice cursor
  ARGV[1] follow cap · ARGV[2] topic cap · ARGV[3] the feed cursor's field
  ARGV[4] readAt or '' · ARGV[5] noticesSeen or '' · ARGV[6] the answer's follows joined by ','
  (de-duplicated, within the cap) · ARGV[7] its topics, likewise
  Returns { authors list or false, topics list or false, readAt or false }: the lists only when
  they are not the answer's (changes were recorded, or the user was held already)
]]
--- @include "followList"
--- @include "recordedFollows"
local authorsKey, topicsKey, fetchKey, cursorsKey, marksKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local feedField = ARGV[3]

-- One kind's list after the install: the answer's own string when nothing was recorded for
-- it (the common case: no split, no join), else the answer with the changes on top.
local function installed(answer, changes, cap)
  if not changes.replaced and #changes.adds == 0 and next(changes.removes) == nil then
    return answer, false
  end
  return table.concat(withRecordedChanges(followListIds(answer), changes, cap), ','), true
end

local changed = true
if redis.call('EXISTS', authorsKey) == 0 then
  local changes = recordedFollowChanges(fetchKey)
  local follows, followsChanged = installed(ARGV[6], changes.a, tonumber(ARGV[1]))
  local topics, topicsChanged = installed(ARGV[7], changes.t, tonumber(ARGV[2]))
  changed = followsChanged or topicsChanged
  writeFollowList(authorsKey, follows, true)
  writeFollowList(topicsKey, topics, false)
  if ARGV[4] ~= '' and redis.call('HEXISTS', cursorsKey, feedField) == 0 then
    redis.call('HSET', cursorsKey, feedField, ARGV[4])
  end
  if ARGV[5] ~= '' and redis.call('HEXISTS', marksKey, 'seen') == 0 then
    redis.call('HSET', marksKey, 'seen', ARGV[5])
  end
end
redis.call('DEL', fetchKey)
if not changed then
  return { false, false, redis.call('HGET', cursorsKey, feedField) }
end
return {
  redis.call('GET', authorsKey) or '',
  redis.call('GET', topicsKey) or '',
  redis.call('HGET', cursorsKey, feedField),
}
