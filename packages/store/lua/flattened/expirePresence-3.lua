--[[
  Remove up to `limit` users of one pool whose presence lapsed at or before the server's now,
  recording an `offline` event for each.
  KEYS[1] online     ZSET    user → presence expiry (ms, on the server's clock)
  KEYS[2] events     STREAM  the pool's change log: k <kind> u <user>
  KEYS[3] offline    ZSET    user → when their stored badge state started to age (now)
  ARGV[1] limit
  ARGV[2] maxlen     approximate cap of the change log
  Returns the removed users, earliest expiry first
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
local onlineKey = KEYS[1]
local eventsKey = KEYS[2]
local offlineKey = KEYS[3]
local limit = ARGV[1]
local maxlen = ARGV[2]

local now = storeNow()
local lapsed = redis.call('ZRANGEBYSCORE', onlineKey, '-inf', now, 'LIMIT', 0, limit)
for _, user in ipairs(lapsed) do
  redis.call('ZREM', onlineKey, user)
  redis.call('ZADD', offlineKey, now, user)
  redis.call('XADD', eventsKey, 'MAXLEN', '~', maxlen, '*', 'k', 'offline', 'u', user)
end
return lapsed
