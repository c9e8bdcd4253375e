--[[
  Store the badge states of users of one pool, each moving to the next version only when its
  counts differ, and publish the changes. A core's writes carry the pool's fencing token; a
  gateway's (a cold start, a read) pass "-". One HMGET and one variadic HSET per chunk of
  users, no call per user. Unfenced changes are published on the pool's channel (the core owning the
  pool learns of them there; its own writes it knows), fenced ones on the pool's written
  channel (an audit trail nobody has to decode); every change is also published to the
  gateways holding its user (see routeUsers-1.lua).
  KEYS[1] fence   STRING  the pool's current fencing token (absent = 0)
  KEYS[2] stale   STRING  writes refused for carrying an older token
  KEYS[3] routes  HASH    user → "gateway=expiry;…", the gateways holding the user
  KEYS[4] badges  HASH    user → "<epoch>|<version>|<computedAt>|<counts>", counts being
                          "name=value,…" sorted by name, non-zero only (docs/redis-keys.md)
  ARGV[1] fence      the writer's token, or "-" for an unfenced write
  ARGV[2] computedAt
  ARGV[3] epoch to use for a user with no stored state
  ARGV[4] channel    the pool's badge channel
  ARGV[5] PUBLISH or SPUBLISH
  ARGV[6] gateway channel prefix: the pool's channel of a gateway is this plus its id
  ARGV[7] the pool's written channel
  ARGV[8] the writes, one line each: "<user> <counts>" (one argument, not two per user: the
          caller then builds and sends one string per pool)
  A message is the writer's token (or "-") on its first line, then one line per change:
  "<user>|<epoch>|<version>|<computedAt>|<counts>".
  Returns -1 when the token is older than the pool's (nothing written, the refusal counted);
  else one string: the number of changes on the first line, then one line per write,
  "<epoch>|<version>|<1 changed, 0 not>"
]]
local fenceKey, staleKey, routesKey, badgesKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local fenced = ARGV[1] ~= '-'
if fenced and tonumber(ARGV[1]) < tonumber(redis.call('GET', fenceKey) or '0') then
  redis.call('INCR', staleKey)
  return -1
end
local computedAt, freshEpoch = ARGV[2], ARGV[3]
local channel, publish, gatewayPrefix = ARGV[4], ARGV[5], ARGV[6]

-- Lua's unpack is bounded by its C stack: variadic calls go in chunks.
local CHUNK = 4000
local function callChunked(command, key, args)
  for first = 1, #args, CHUNK do
    redis.call(command, key, unpack(args, first, math.min(first + CHUNK - 1, #args)))
  end
end

local results, writes, changes, changedUsers = {}, {}, {}, {}
local allUsers, allCounts = {}, {}
for user, counts in string.gmatch(ARGV[8], '([^ \n]+) ([^\n]*)') do
  allUsers[#allUsers + 1] = user
  allCounts[#allCounts + 1] = counts
end
local find, sub = string.find, string.sub
for first = 1, #allUsers, CHUNK do
  local last = math.min(first + CHUNK - 1, #allUsers)
  -- One HMGET for a chunk of users, not a call per user.
  local stored = redis.call('HMGET', badgesKey, unpack(allUsers, first, last))
  for k = 1, last - first + 1 do
    local user, counts = allUsers[first + k - 1], allCounts[first + k - 1]
    local packed = stored[k]
    local epoch, version, oldCounts = freshEpoch, 0, nil
    if packed then
      local a = find(packed, '|', 1, true)
      local b = find(packed, '|', a + 1, true)
      local c = find(packed, '|', b + 1, true)
      epoch, version, oldCounts = sub(packed, 1, a - 1), tonumber(sub(packed, a + 1, b - 1)), sub(packed, c + 1)
    end
    if oldCounts == counts then
      results[#results + 1] = epoch .. '|' .. version .. '|0'
      -- A cold start says when it looked; a core's unchanged counts are not rewritten.
      if not fenced then
        writes[#writes + 1] = user
        writes[#writes + 1] = epoch .. '|' .. version .. '|' .. computedAt .. '|' .. counts
      end
    else
      version = version + 1
      local state = epoch .. '|' .. version .. '|' .. computedAt .. '|' .. counts
      results[#results + 1] = epoch .. '|' .. version .. '|1'
      writes[#writes + 1] = user
      writes[#writes + 1] = state
      changes[#changes + 1] = user .. '|' .. state
      changedUsers[#changedUsers + 1] = user
    end
  end
end
callChunked('HSET', badgesKey, writes)

if #changes > 0 then
  local header = ARGV[1] .. '\n'
  redis.call(publish, fenced and ARGV[7] or channel, header .. table.concat(changes, '\n'))
  if redis.call('EXISTS', routesKey) == 1 then
    local now = tonumber(computedAt)
    local byGateway, gateways = {}, {}
    for first = 1, #changedUsers, CHUNK do
      local last = math.min(first + CHUNK - 1, #changedUsers)
      local routes = redis.call('HMGET', routesKey, unpack(changedUsers, first, last))
      for k = 1, last - first + 1 do
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
              list[#list + 1] = changes[first + k - 1]
            end
          end
        end
      end
    end
    for _, gateway in ipairs(gateways) do
      redis.call(publish, gatewayPrefix .. gateway, header .. table.concat(byGateway[gateway], '\n'))
    end
  end
end
return #changes .. '\n' .. table.concat(results, '\n')
