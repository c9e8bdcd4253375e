--[[
  Store the badge states of users of one pool, moving each to the next version only when its
  counts differ, and publish the changed ones as one message. A core's writes are guarded by
  the pool's fencing token; a cold start computed from the stored sources passes "-" (no lease
  to fence). Each change is also routed to the gateways holding its user (see routeUsers-1.lua).
  Takes a key count per call: 3 + one badge key per write.
  KEYS[1]   fence      STRING  the pool's current fencing token (absent = 0)
  KEYS[2]   stale      STRING  writes refused for carrying an older token
  KEYS[3]   routes     HASH    user → "gateway=expiry;…", the gateways holding the user
  KEYS[4..] badge      HASH    one per write, in write order:
                               _e epoch · _v version · _at computedAt · one field per non-zero count
  ARGV[1] fence      the writer's token, or "-" for an unfenced write
  ARGV[2] computedAt
  ARGV[3] epoch to use for a user with no stored state
  ARGV[4] channel    the pool's badge channel
  ARGV[5] PUBLISH or SPUBLISH
  ARGV[6] gateway channel prefix: the pool's channel of a gateway is this plus its id
  ARGV[7..] per write: user, n = number of non-zero counts, then n pairs (count name, value)
  Returns -1 when the token is older than the pool's (nothing written, the refusal counted);
  else { epoch, version, changed (1/0) } per write, flattened
]]
local fenceKey = KEYS[1]
local staleKey = KEYS[2]
local fence = tonumber(ARGV[1])
local computedAt = ARGV[2]
local freshEpoch = ARGV[3]
local channel = ARGV[4]
local publish = ARGV[5]
local gatewayPrefix = ARGV[6]
local routesKey = KEYS[3]

if fence ~= nil and fence < tonumber(redis.call('GET', fenceKey) or '0') then
  redis.call('INCR', staleKey)
  return -1
end

local stamps = {}
local changes = {}
local arg = 7
for k = 4, #KEYS do
  local badgeKey = KEYS[k]
  local user = ARGV[arg]
  local n = tonumber(ARGV[arg + 1])
  local first, last = arg + 2, arg + 1 + 2 * n
  arg = last + 1

  local stored = redis.call('HGETALL', badgeKey)
  local epoch, version = nil, 0
  local old = {}
  local oldCount = 0
  for i = 1, #stored, 2 do
    local name, value = stored[i], stored[i + 1]
    if name == '_e' then
      epoch = value
    elseif name == '_v' then
      version = tonumber(value)
    elseif name ~= '_at' then
      old[name] = value
      oldCount = oldCount + 1
    end
  end

  local same = epoch ~= nil and oldCount == n
  if same then
    for i = first, last, 2 do
      if old[ARGV[i]] ~= ARGV[i + 1] then
        same = false
        break
      end
    end
  end

  if same then
    redis.call('HSET', badgeKey, '_at', computedAt)
    stamps[#stamps + 1] = epoch
    stamps[#stamps + 1] = version
    stamps[#stamps + 1] = 0
  else
    if epoch == nil then
      epoch = freshEpoch
    end
    version = version + 1
    redis.call('DEL', badgeKey)
    redis.call('HSET', badgeKey, '_e', epoch, '_v', version, '_at', computedAt, unpack(ARGV, first, last))
    local fields = {}
    for i = first, last, 2 do
      fields[ARGV[i]] = tonumber(ARGV[i + 1])
    end
    stamps[#stamps + 1] = epoch
    stamps[#stamps + 1] = version
    stamps[#stamps + 1] = 1
    changes[#changes + 1] = {
      user = user, epoch = epoch, version = version, fields = fields,
      computedAt = tonumber(computedAt), fence = fence
    }
  end
end

if #changes > 0 then
  redis.call(publish, channel, cjson.encode(changes))
  local now = tonumber(computedAt)
  local byGateway, gateways = {}, {}
  for _, change in ipairs(changes) do
    local route = redis.call('HGET', routesKey, change.user)
    if route then
      for gateway, expiry in string.gmatch(route, '([^=;]+)=(%d+)') do
        if tonumber(expiry) > now then
          if byGateway[gateway] == nil then
            byGateway[gateway] = {}
            gateways[#gateways + 1] = gateway
          end
          local list = byGateway[gateway]
          list[#list + 1] = change
        end
      end
    end
  end
  for _, gateway in ipairs(gateways) do
    redis.call(publish, gatewayPrefix .. gateway, cjson.encode(byGateway[gateway]))
  end
end
return stamps
