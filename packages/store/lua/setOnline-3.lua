--[[
  Mark users of one pool online for a TTL from the server's now (never shortening a later
  expiry: several gateways may hold a user, each with its own TTL); record an `online` event for
  each one who was not online (absent, or lapsed but not yet expired) before.
  KEYS[1] online     ZSET    user → presence expiry (ms, on the server's clock)
  KEYS[2] events     STREAM  the pool's change log: k <kind> u <user>
  KEYS[3] offline    ZSET    user → when their stored badge state started to age: an online
                             user leaves it (expireBadgeStates-3.lua)
  ARGV[1] maxlen     approximate cap of the change log
  ARGV[2..] pairs of (user, ttl ms)
  Returns one flag per pair, in order: 1 the user came online, 0 a renewal
]]
--- @include "storeNow"
local onlineKey = KEYS[1]
local eventsKey = KEYS[2]
local offlineKey = KEYS[3]
local maxlen = ARGV[1]
local now = storeNow()

local changed = {}
for i = 2, #ARGV, 2 do
  local user = ARGV[i]
  local expiry = now + tonumber(ARGV[i + 1])
  local previous = redis.call('ZSCORE', onlineKey, user)
  if previous == false or tonumber(previous) < expiry then
    redis.call('ZADD', onlineKey, expiry, user)
  end
  if previous == false or tonumber(previous) <= now then
    redis.call('ZREM', offlineKey, user)
    redis.call('XADD', eventsKey, 'MAXLEN', '~', maxlen, '*', 'k', 'online', 'u', user)
    changed[#changed + 1] = 1
  else
    changed[#changed + 1] = 0
  end
end
return changed
