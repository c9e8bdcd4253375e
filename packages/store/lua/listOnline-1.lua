--[[
  The users of one pool online at the server's now (lapsed ones not yet expired left out).
  KEYS[1] online     ZSET    user → presence expiry (ms, on the server's clock)
  Returns the users, earliest expiry first
]]
--- @include "storeNow"
return redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. storeNow(), '+inf')
