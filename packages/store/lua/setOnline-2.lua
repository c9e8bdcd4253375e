--[[
  Mark users of one pool online until their expiry (never shortening a later one: several
  gateways may hold a user, each with its own TTL); record an `online` event for each one who
  was not online (absent, or lapsed but not yet expired) before.
  KEYS[1] online     ZSET    user → presence expiry (ms)
  KEYS[2] events     STREAM  the pool's change log: k <kind> u <user>
  ARGV[1] now
  ARGV[2] maxlen     approximate cap of the change log
  ARGV[3..] pairs of (user, expiry = now + ttl, computed by the caller)
  Returns one flag per pair, in order: 1 the user came online, 0 a renewal
]]
local onlineKey = KEYS[1]
local eventsKey = KEYS[2]
local now = tonumber(ARGV[1])
local maxlen = ARGV[2]

local changed = {}
for i = 3, #ARGV, 2 do
  local user = ARGV[i]
  local previous = redis.call('ZSCORE', onlineKey, user)
  if previous == false or tonumber(previous) < tonumber(ARGV[i + 1]) then
    redis.call('ZADD', onlineKey, ARGV[i + 1], user)
  end
  if previous == false or tonumber(previous) <= now then
    redis.call('XADD', eventsKey, 'MAXLEN', '~', maxlen, '*', 'k', 'online', 'u', user)
    changed[#changed + 1] = 1
  else
    changed[#changed + 1] = 0
  end
end
return changed
