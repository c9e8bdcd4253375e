--[[
  The server's clock in ms, read on the shard of KEYS[1] (the {g} slot on a Redis Cluster: the
  shard that decides node liveness). Nothing is read or written.
  KEYS[1] any key of the slot whose server is asked
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
return storeNow()
