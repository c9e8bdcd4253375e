--[[
  Forget the nodes whose heartbeat lapsed at the server's now, then list the live ones.
  KEYS[1] nodesAlive ZSET  node id → time the node stops counting as live (ms, server's clock)
  KEYS[2] nodesInfo  HASH  node id → NodeInfo JSON
  Returns the NodeInfo JSON of every node live after now (false where the info is missing)
]]
--- @include "storeNow"
local aliveKey = KEYS[1]
local infoKey = KEYS[2]
local now = storeNow()

local lapsed = redis.call('ZRANGEBYSCORE', aliveKey, '-inf', now)
if #lapsed > 0 then
  redis.call('ZREM', aliveKey, unpack(lapsed))
  redis.call('HDEL', infoKey, unpack(lapsed))
end

local live = redis.call('ZRANGEBYSCORE', aliveKey, '(' .. now, '+inf')
if #live == 0 then
  return {}
end
return redis.call('HMGET', infoKey, unpack(live))
