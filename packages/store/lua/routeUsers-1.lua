--[[
  Route users' badge changes to a gateway until an expiry, or stop routing them there.
  A user may be held by several gateways (several devices); each keeps its own expiry, and
  lapsed entries are dropped whenever the user's route is rewritten.
  KEYS[1] routes     HASH  user → "gateway=expiry;gateway=expiry…"
  ARGV[1] gateway    the gateway's node id (no "=" or ";")
  ARGV[2] expiry     ms until which the route holds; 0 removes the gateway's route
  ARGV[3] now        ms; entries at or before it are dropped
  ARGV[4..] users
  Returns one flag per user, in order: 1 when its route still names a gateway, else 0
]]
local routesKey = KEYS[1]
local gateway = ARGV[1]
local expiry = tonumber(ARGV[2])
local now = tonumber(ARGV[3])

local routed = {}
for i = 4, #ARGV do
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
  if expiry > now then
    kept[#kept + 1] = gateway .. '=' .. ARGV[2]
  end
  if #kept > 0 then
    redis.call('HSET', routesKey, user, table.concat(kept, ';'))
    routed[#routed + 1] = 1
  else
    redis.call('HDEL', routesKey, user)
    routed[#routed + 1] = 0
  end
end
return routed
