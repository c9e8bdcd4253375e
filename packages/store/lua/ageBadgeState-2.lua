--[[
  A gateway stored a user's badge state: unless the user is online, it starts to age from that
  computation in the pool's offline index (an entry already there keeps its older time), so the
  lookback expiry (expireBadgeStates-3.lua) finds it. An online user gets no entry: going
  offline writes it.
  KEYS[1] offline  ZSET  user → when their stored badge state started to age
  KEYS[2] online   ZSET  the pool's presence: user → expiry (ms, on the server's clock)
  ARGV[1] user
  ARGV[2] computedAt
  Returns 1 when an entry was added, else 0
]]
--- @include "storeNow"
local presence = redis.call('ZSCORE', KEYS[2], ARGV[1])
if presence and tonumber(presence) > storeNow() then
  return 0
end
return redis.call('ZADD', KEYS[1], 'NX', ARGV[2], ARGV[1])
