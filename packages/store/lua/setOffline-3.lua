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
--- @include "storeNow"
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
