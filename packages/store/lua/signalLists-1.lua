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
--- @include "storeNow"
local routesKey = KEYS[1]
local prefix, publish = ARGV[1], ARGV[2]
local now = storeNow()
local byGateway, gateways = {}, {}
for i = 3, #ARGV do
  local route = redis.call('HGET', routesKey, ARGV[i])
  if route then
    for gateway, expiry in string.gmatch(route, '([^=;]+)=(%d+)') do
      if tonumber(expiry) > now then
        local list = byGateway[gateway]
        if list == nil then
          list = {}
          byGateway[gateway] = list
          gateways[#gateways + 1] = gateway
        end
        list[#list + 1] = ARGV[i]
      end
    end
  end
end
for _, gateway in ipairs(gateways) do
  redis.call(publish, prefix .. gateway, table.concat(byGateway[gateway], '\n'))
end
return #gateways
