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
