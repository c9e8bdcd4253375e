--[[
  Route users' badge changes to a gateway for a TTL from the server's now, or stop routing them
  there. A user may be held by several gateways (several devices); each keeps its own expiry,
  and lapsed entries are dropped whenever the user's route is rewritten.
  KEYS[1] routes     HASH  user → "gateway=expiry;gateway=expiry…" (ms, on the server's clock)
  ARGV[1] gateway    the gateway's node id (no "=" or ";")
  ARGV[2] ttl        ms the route holds; 0 removes the gateway's route
  ARGV[3..] users
  Returns one flag per user, in order: 1 when its route still names a gateway, else 0
]]
--- @include "storeNow"
local routesKey = KEYS[1]
local gateway = ARGV[1]
local ttl = tonumber(ARGV[2])
local now = storeNow()
local mine = ttl > 0 and (gateway .. '=' .. (now + ttl)) or nil

local routed = {}
for i = 3, #ARGV do
  local user = ARGV[i]
  local kept = {}
  local route = redis.call('HGET', routesKey, user)
  if route then
    for other, expiresAt in string.gmatch(route, '([^=;]+)=(%d+)') do
      if other ~= gateway and tonumber(expiresAt) > now then
        kept[#kept + 1] = other .. "=" .. expiresAt
      end
    end
  end
  if mine then kept[#kept + 1] = mine end
  if #kept > 0 then
    redis.call('HSET', routesKey, user, table.concat(kept, ';'))
    routed[#routed + 1] = 1
  else
    redis.call('HDEL', routesKey, user)
    routed[#routed + 1] = 0
  end
end
return routed
