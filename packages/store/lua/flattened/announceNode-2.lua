--[[
  A node's heartbeat: live for a TTL from the server's now, its info replaced.
  KEYS[1] nodesAlive ZSET  node id → time the node stops counting as live (ms, server's clock)
  KEYS[2] nodesInfo  HASH  node id → NodeInfo JSON
  ARGV[1] node id
  ARGV[2] ttl ms
  ARGV[3] NodeInfo JSON
]]
--[[
  The server's clock, in ms. Presence, routes and node liveness are written and checked on it
  alone, so the clocks of the nodes calling the scripts never meet (docs/redis-keys.md, "One
  clock"). Scripts that call it write their effects, not the script, to replicas and the AOF.
]]
local function storeNow()
  local time = redis.call('TIME')
  return tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
end
redis.call('ZADD', KEYS[1], storeNow() + tonumber(ARGV[2]), ARGV[1])
redis.call('HSET', KEYS[2], ARGV[1], ARGV[3])
return 1
