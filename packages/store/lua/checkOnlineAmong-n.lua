--[[
  Which of several users are online at the server's now: checkOnline-1 for a page of users in
  one call (offline delivery drops the online ones of each page and batch). On Redis Cluster the
  caller passes one pool's key (a call per pool); on one server, every pool's key at once.
  KEYS[1..k] online  ZSET    user → presence expiry (ms, on the server's clock), one per pool
  ARGV    key index (1-based), user, key index, user, …
  Returns one 1 or 0 per user, in order
]]
--- @include "storeNow"
local now = storeNow()
local online = {}
for i = 1, #ARGV, 2 do
  local expiry = redis.call('ZSCORE', KEYS[tonumber(ARGV[i])], ARGV[i + 1])
  online[#online + 1] = (expiry and tonumber(expiry) > now) and 1 or 0
end
return online
