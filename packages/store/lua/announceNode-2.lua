--[[
  A node's heartbeat: live for a TTL from the server's now, its info replaced.
  KEYS[1] nodesAlive ZSET  node id → time the node stops counting as live (ms, server's clock)
  KEYS[2] nodesInfo  HASH  node id → NodeInfo JSON
  ARGV[1] node id
  ARGV[2] ttl ms
  ARGV[3] NodeInfo JSON
]]
--- @include "storeNow"
redis.call('ZADD', KEYS[1], storeNow() + tonumber(ARGV[2]), ARGV[1])
redis.call('HSET', KEYS[2], ARGV[1], ARGV[3])
return 1
