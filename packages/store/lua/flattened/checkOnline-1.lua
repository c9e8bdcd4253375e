--[[
  Whether one user is online at the server's now.
  KEYS[1] online     ZSET    user → presence expiry (ms, on the server's clock)
  ARGV[1] user
  Returns 1 or 0
]]
--[[
  The server's clock, in ms. Presence, routes and node liveness are written and checked on it
  alone, so the clocks of the nodes calling the scripts never meet (docs/redis-keys.md, "One
  clock"). Scripts that call it write their effects, not the script, to replicas and the AOF.
]]
local function storeNow()
  local time = redis.call('TIME')
  return tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
end
local expiry = redis.call('ZSCORE', KEYS[1], ARGV[1])
if expiry and tonumber(expiry) > storeNow() then return 1 end
return 0
