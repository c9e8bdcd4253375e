--[[
  Which of several users are online at the server's now: checkOnline-1 for a page of users in
  one call (offline delivery drops the online ones of each page and batch). On Redis Cluster the
  caller passes one pool's key (a call per pool); on one server, every pool's key at once.
  KEYS[1..k] online  ZSET    user → presence expiry (ms, on the server's clock), one per pool
  ARGV    key index (1-based), user, key index, user, …
  Returns one 1 or 0 per user, in order
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
local now = storeNow()
local online = {}
for i = 1, #ARGV, 2 do
  local expiry = redis.call('ZSCORE', KEYS[tonumber(ARGV[i])], ARGV[i + 1])
  online[#online + 1] = (expiry and tonumber(expiry) > now) and 1 or 0
end
return online
