--[[
  Add posts to one topic's window and trim it to the lookback window (Redis Cluster: each topic
  window is its own slot, written after the author's script stored the posts).
  KEYS[1] window     ZSET  "<author> <id> <topics>" → ts
  ARGV[1] minTs      entries at or before it are outside the lookback
  ARGV[2..] pairs of (ts, member)
  Returns the number of members added now
]]
local windowKey = KEYS[1]
local added = 0
for i = 2, #ARGV, 2 do
  added = added + redis.call('ZADD', windowKey, 'NX', ARGV[i], ARGV[i + 1])
end
redis.call('ZREMRANGEBYSCORE', windowKey, '-inf', ARGV[1])
return added
