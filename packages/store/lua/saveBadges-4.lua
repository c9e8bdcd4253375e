--[[
  Store the badge states of users of one pool and publish the changes. A core's writes carry
  the pool's fencing token; a gateway's (a cold start, a read) pass "-".

  Each write names the state its writer believes is stored (the "known" state: its epoch and
  version, which name its counts). Where the stored state is that one, the writer's new state is
  stored as it comes: a core that keeps its
  users' states in memory writes a batch with one HMGET and one variadic HSET per chunk, and no
  string work per user. Where it is not (the writer does not know, or another writer came
  between), the script decides: equal counts keep the stored version, other counts get the
  stored version + 1 (a new epoch and version 1 when nothing is stored), and the answer tells
  the writer what is stored now.

  KEYS[1] fence   STRING  the pool's current fencing token (absent = 0)
  KEYS[2] stale   STRING  writes refused for carrying an older token
  KEYS[3] routes  HASH    user → "gateway=expiry;…", the gateways holding the user
  KEYS[4] badges  HASH    user → "<epoch>|<version>|<computedAt>|<counts>", counts being
                          "name=value,…" sorted by name, non-zero only (docs/redis-keys.md)
  ARGV[1] fence      the writer's token, or "-" for an unfenced write
  ARGV[2] computedAt
  ARGV[3] epoch for a user with no stored state
  ARGV[4] channel    the pool's badge channel
  ARGV[5] PUBLISH or SPUBLISH
  ARGV[6] gateway channel prefix: the pool's channel of a gateway is this plus its id
  ARGV[7] the pool's written channel
  ARGV[8] the writes, three lines each (one argument, not three per user: the caller builds
          and sends one string per pool): the user; the known state, "<epoch>|<version>|" or ""
          for "nothing is stored" or "?" for "the writer does not know"; the new state (packed)
  A message is the writer's token (or "-") on its first line, then two lines per change: the
  user, then the stored state.
  Returns -1 when the token is older than the pool's (nothing written, the refusal counted);
  else one string: the number of changes on the first line, then, for each write whose known
  state was not the stored one, a line "<index>|<1 changed, 0 not>|<stored state now>" (index
  from 1 in the order of the writes); every other write stored its new state.
]]
local fenceKey, staleKey, routesKey, badgesKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local fenced = ARGV[1] ~= '-'
if fenced and tonumber(ARGV[1]) < tonumber(redis.call('GET', fenceKey) or '0') then
  redis.call('INCR', staleKey)
  return -1
end
local computedAt, freshEpoch = ARGV[2], ARGV[3]
local channel, publish, gatewayPrefix = ARGV[4], ARGV[5], ARGV[6]

-- Lua's unpack is bounded by its C stack: variadic calls go in chunks (of users; 2 args each).
local CHUNK = 3000
local find, sub = string.find, string.sub

-- Whether the stored state (false when none) is the one the writer believes it is.
local function isKnown(stored, known)
  if stored == false then return known == '' end
  return known ~= '' and known ~= '?' and find(stored, known, 1, true) == 1
end

local function countsOf(packed)
  local a = find(packed, '|', 1, true)
  local b = find(packed, '|', a + 1, true)
  local c = find(packed, '|', b + 1, true)
  return sub(packed, 1, a - 1), tonumber(sub(packed, a + 1, b - 1)), sub(packed, c + 1)
end

local allUsers, allKnown, allProposed = {}, {}, {}
for user, known, proposed in string.gmatch(ARGV[8], '([^\n]+)\n([^\n]*)\n([^\n]+)\n') do
  local i = #allUsers + 1
  allUsers[i], allKnown[i], allProposed[i] = user, known, proposed
end
local n = #allUsers

-- Per chunk, the (user, state) changedHere of the writes that changed their user's state.
local changedPairs, corrections, changes = {}, {}, 0
for first = 1, n, CHUNK do
  local last = math.min(first + CHUNK - 1, n)
  local stored = redis.call('HMGET', badgesKey, unpack(allUsers, first, last))
  local fast = true
  for k = 1, last - first + 1 do
    if not isKnown(stored[k], allKnown[first + k - 1]) then
      fast = false
      break
    end
  end
  if fast then
    local changedHere = {}
    for i = first, last do
      changedHere[#changedHere + 1] = allUsers[i]
      changedHere[#changedHere + 1] = allProposed[i]
    end
    redis.call('HSET', badgesKey, unpack(changedHere))
    changedPairs[#changedPairs + 1] = changedHere
    changes = changes + (last - first + 1)
  else
    local writes, changedHere = {}, {}
    for k = 1, last - first + 1 do
      local i = first + k - 1
      local user, proposed, now = allUsers[i], allProposed[i], stored[k] or ''
      local state, changed = proposed, true
      if not isKnown(stored[k], allKnown[i]) then
        local _, _, counts = countsOf(proposed)
        if now == '' then
          state = freshEpoch .. '|1|' .. computedAt .. '|' .. counts
        else
          local epoch, version, oldCounts = countsOf(now)
          if oldCounts == counts then
            changed = false
            state = now
            -- A cold start says when it looked; a core's unchanged counts are not rewritten.
            if not fenced then
              state = epoch .. '|' .. version .. '|' .. computedAt .. '|' .. counts
              writes[#writes + 1] = user
              writes[#writes + 1] = state
            end
          else
            state = epoch .. '|' .. (version + 1) .. '|' .. computedAt .. '|' .. counts
          end
        end
        corrections[#corrections + 1] = i .. (changed and '|1|' or '|0|') .. state
      end
      if changed then
        writes[#writes + 1] = user
        writes[#writes + 1] = state
        changedHere[#changedHere + 1] = user
        changedHere[#changedHere + 1] = state
      end
    end
    for at = 1, #writes, 2 * CHUNK do
      redis.call('HSET', badgesKey, unpack(writes, at, math.min(at + 2 * CHUNK - 1, #writes)))
    end
    if #changedHere > 0 then
      changedPairs[#changedPairs + 1] = changedHere
      changes = changes + #changedHere / 2
    end
  end
end

if changes > 0 then
  local header = ARGV[1]
  local message = { header }
  for c = 1, #changedPairs do
    message[c + 1] = table.concat(changedPairs[c], '\n')
  end
  redis.call(publish, fenced and ARGV[7] or channel, table.concat(message, '\n'))
  if redis.call('EXISTS', routesKey) == 1 then
    local now = tonumber(computedAt)
    local byGateway, gateways = {}, {}
    for c = 1, #changedPairs do
      local changedHere = changedPairs[c]
      local users = {}
      for j = 1, #changedHere, 2 do
        users[#users + 1] = changedHere[j]
      end
      local routes = redis.call('HMGET', routesKey, unpack(users))
      for k = 1, #users do
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
              list[#list + 1] = users[k]
              list[#list + 1] = changedHere[2 * k]
            end
          end
        end
      end
    end
    for _, gateway in ipairs(gateways) do
      redis.call(publish, gatewayPrefix .. gateway, header .. '\n' .. table.concat(byGateway[gateway], '\n'))
    end
  end
end
if #corrections == 0 then return tostring(changes) end
return changes .. '\n' .. table.concat(corrections, '\n')
