--[[
  Tell the gateways holding users of one pool that those users' conversation lists may have
  changed: one message per gateway, on its list channel of the pool, naming its users. Route
  expiries are ms of this server's clock (routeUsers-1.lua); a lapsed route is skipped.
  KEYS[1] routes   HASH  user → "gateway=expiry;…"
  ARGV[1] the pool's list channel prefix: a gateway's channel is this plus its id
  ARGV[2] PUBLISH or SPUBLISH
  ARGV[3..] users
  Returns the number of messages published
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
--[[
  Who of `users` each gateway holds: their routes (KEYS of a pool's routes hash: user →
  "gateway=expiry;…") read in chunks of HMGET, a lapsed route skipped (expiries are ms of this
  server's clock, `now`). Returns the gateways in the order first met and gateway → its list:
  the users, each followed by its entry of `states` when `states` is given.
]]
local function routedByGateway(routesKey, users, states, now)
  local CHUNK = 3000
  local byGateway, gateways = {}, {}
  for first = 1, #users, CHUNK do
    local routes = redis.call('HMGET', routesKey, unpack(users, first, math.min(first + CHUNK - 1, #users)))
    for k = 1, #routes do
      local route = routes[k]
      if route then
        for gateway, expiry in string.gmatch(route, '([^=;]+)=(%d+)') do
          if tonumber(expiry) > now then
            local list = byGateway[gateway]
            if list == nil then
              list = {}
              byGateway[gateway] = list
              gateways[#gateways + 1] = gateway
            end
            list[#list + 1] = users[first + k - 1]
            if states then list[#list + 1] = states[first + k - 1] end
          end
        end
      end
    end
  end
  return gateways, byGateway
end
local prefix, publish = ARGV[1], ARGV[2]
local users = {}
for i = 3, #ARGV do
  users[#users + 1] = ARGV[i]
end
local gateways, byGateway = routedByGateway(KEYS[1], users, nil, storeNow())
for _, gateway in ipairs(gateways) do
  redis.call(publish, prefix .. gateway, table.concat(byGateway[gateway], '\n'))
end
return #gateways
