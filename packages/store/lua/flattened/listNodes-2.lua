--[[
  Forget the nodes whose heartbeat lapsed at the server's now, then list the live ones.
  KEYS[1] nodesAlive ZSET  node id → time the node stops counting as live (ms, server's clock)
  KEYS[2] nodesInfo  HASH  node id → NodeInfo JSON
  Returns the NodeInfo JSON of every node live after now (false where the info is missing)
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
