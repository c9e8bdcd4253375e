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
--- @include "routedByGateway"
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
