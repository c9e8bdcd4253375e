--[[
  What a cold start reads of one user's own keys, in one call instead of four: the follows,
  the topic follows, the feed read cursor and the marks (notice cursor, red dot clicks). All
  four keys carry the user's hash tag, so this runs unchanged on a Redis Cluster.
  KEYS[1] follows SET · KEYS[2] topics SET · KEYS[3] cursors HASH · KEYS[4] marks HASH
  ARGV[1] the feed cursor's field in KEYS[3]
  Returns { follows, topics, readAt or false, marks as HGETALL returns them }
]]
return {
  redis.call('SMEMBERS', KEYS[1]),
  redis.call('SMEMBERS', KEYS[2]),
  redis.call('HGET', KEYS[3], ARGV[1]),
  redis.call('HGETALL', KEYS[4]),
}
