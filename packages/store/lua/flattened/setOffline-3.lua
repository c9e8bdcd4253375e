--[[
  Take a user offline now; record an `offline` event when the user had a presence entry
  (online, or lapsed but not yet expired: that offline event is still owed).
  KEYS[1] online     ZSET    user → presence expiry (ms)
  KEYS[2] events     STREAM  the pool's change log: k <kind> u <user>
  KEYS[3] offline    ZSET    user → when their stored badge state started to age (now)
  ARGV[1] user
  ARGV[2] maxlen     approximate cap of the change log
  Returns 1 when the user had a presence entry, else 0
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
local user = ARGV[1]
local maxlen = ARGV[2]

if redis.call('ZREM', onlineKey, user) == 0 then
  return 0
end
redis.call('ZADD', offlineKey, storeNow(), user)
redis.call('XADD', eventsKey, 'MAXLEN', '~', maxlen, '*', 'k', 'offline', 'u', user)
return 1
