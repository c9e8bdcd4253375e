--[[
  Which of several users of one pool are online at the server's now: checkOnline-1 for a page of
  users in one call (offline delivery drops the online ones of each page and batch).
  KEYS[1] online     ZSET    user → presence expiry (ms, on the server's clock)
  ARGV    users
  Returns one 1 or 0 per user, in order
]]
--- @include "storeNow"
local now = storeNow()
local online = {}
for i = 1, #ARGV do
  local expiry = redis.call('ZSCORE', KEYS[1], ARGV[i])
  online[i] = (expiry and tonumber(expiry) > now) and 1 or 0
end
return online
