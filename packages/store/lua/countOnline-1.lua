--[[
  How many users of one pool are online at the server's now.
  KEYS[1] online     ZSET    user → presence expiry (ms, on the server's clock)
]]
--- @include "storeNow"
return redis.call('ZCOUNT', KEYS[1], '(' .. storeNow(), '+inf')
