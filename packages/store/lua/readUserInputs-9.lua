--[[
  What a cold start reads of one user's own keys, in one call (includes/userInputsAt.lua): the
  follows, the topic follows, the feed read cursor, the marks (notice cursor, red dot clicks),
  the conversation index and the interaction counters' counts (includes/countUserCounters.lua,
  which writes the count's time). Every key carries the user's hash tag, so this runs unchanged
  on a Redis Cluster.
  KEYS[1] follows STRING · KEYS[2] topics STRING (ids joined by ',') · KEYS[3] cursors HASH ·
  KEYS[4] marks HASH · KEYS[5] conversations SET · KEYS[6] counter state HASH · KEYS[7..9]
  events ZSET of up to three kinds, in ARGV's order (fewer kinds repeat a key; it is not read)
  ARGV[1] the feed cursor's field in KEYS[3] · ARGV[2] windowMs · ARGV[3..] the kinds, zero to
  three
  Returns { follows or false, topics or false (false: no list), readAt or false, marks as
  HGETALL returns them, conversation ids, { watermark, count of each kind } }
]]
--- @include "userInputsAt"
local kinds = {}
for i = 3, #ARGV do
  kinds[i - 2] = ARGV[i]
end
return userInputsAt(0, ARGV[1], kinds, tonumber(ARGV[2]))
