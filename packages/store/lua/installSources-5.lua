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
  ARGV[4] readAt or '' · ARGV[5] noticesSeen or '' · ARGV[6] n, the number of follows
  ARGV[7..6+n] the answer's follows · ARGV[7+n..] its topics
  Returns { authors list, topics list or false, readAt or false } after the install
]]
--- @include "followList"
--- @include "recordedFollows"
local authorsKey, topicsKey, fetchKey, cursorsKey, marksKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local feedField = ARGV[3]

if redis.call('EXISTS', authorsKey) == 0 then
  local changes = recordedFollowChanges(fetchKey)
  local follows, topics = {}, {}
  local n = tonumber(ARGV[6])
  for i = 7, 6 + n do
    follows[#follows + 1] = ARGV[i]
  end
  for i = 7 + n, #ARGV do
    topics[#topics + 1] = ARGV[i]
  end
  follows = withRecordedChanges(follows, changes.a, tonumber(ARGV[1]))
  topics = withRecordedChanges(topics, changes.t, tonumber(ARGV[2]))
  writeFollowList(authorsKey, table.concat(follows, ','), true)
  writeFollowList(topicsKey, table.concat(topics, ','), false)
  if ARGV[4] ~= '' and redis.call('HEXISTS', cursorsKey, feedField) == 0 then
    redis.call('HSET', cursorsKey, feedField, ARGV[4])
  end
  if ARGV[5] ~= '' and redis.call('HEXISTS', marksKey, 'seen') == 0 then
    redis.call('HSET', marksKey, 'seen', ARGV[5])
  end
end
redis.call('DEL', fetchKey)
return {
  redis.call('GET', authorsKey),
  redis.call('GET', topicsKey),
  redis.call('HGET', cursorsKey, feedField),
}
