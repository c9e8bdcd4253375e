--[[
  Whether one user is online at the server's now.
  KEYS[1] online     ZSET    user → presence expiry (ms, on the server's clock)
  ARGV[1] user
  Returns 1 or 0
]]
--- @include "storeNow"
local expiry = redis.call('ZSCORE', KEYS[1], ARGV[1])
if expiry and tonumber(expiry) > storeNow() then return 1 end
return 0
