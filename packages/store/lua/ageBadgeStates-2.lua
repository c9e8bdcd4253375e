--[[
  ageBadgeState-2.lua for many users of one pool at once (a gateway's grouped save, offline
  delivery's batches): each user not online starts to age from that computation in the pool's
  offline index (an entry already there keeps its older time). An online user gets no entry:
  going offline writes it.
  KEYS[1] offline  ZSET  user → when their stored badge state started to age
  KEYS[2] online   ZSET  the pool's presence: user → expiry (ms, on the server's clock)
  ARGV[1] computedAt
  ARGV[2…] the users
  Returns the number of entries added
]]
--- @include "storeNow"
local now = storeNow()
local added = 0
for i = 2, #ARGV do
  local presence = redis.call('ZSCORE', KEYS[2], ARGV[i])
  if not (presence and tonumber(presence) > now) then
    added = added + redis.call('ZADD', KEYS[1], 'NX', ARGV[1], ARGV[i])
  end
end
return added
