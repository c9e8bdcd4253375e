--[[
  Expires the stored badge states of one pool's users who have been offline for the lookback:
  walks the pool's offline index oldest first. A user online again leaves the index (going
  offline puts them back); a state computed after the cutoff (a poll of the offline user) moves
  the entry to that time; any other state is deleted with its entry, so the next computation
  starts a new epoch.
  KEYS[1] offline  ZSET  user → when their stored state started to age (went offline, or an
                         unfenced write while not online)
  KEYS[2] online   ZSET  the pool's presence: user → expiry (ms, on the server's clock)
  KEYS[3] badges   HASH  user → "<epoch>|<version>|<computedAt>|<counts>"
  ARGV[1] cutoff   entries at or before it are due
  ARGV[2] limit    entries looked at per call
  Returns the number of badge states deleted
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
local offlineKey, onlineKey, badgesKey = KEYS[1], KEYS[2], KEYS[3]
local cutoff = tonumber(ARGV[1])
local now = storeNow()
local expired = 0
local due = redis.call('ZRANGEBYSCORE', offlineKey, '-inf', cutoff, 'LIMIT', 0, ARGV[2])
for _, user in ipairs(due) do
  local presence = redis.call('ZSCORE', onlineKey, user)
  if presence and tonumber(presence) > now then
    redis.call('ZREM', offlineKey, user)
  else
    local packed = redis.call('HGET', badgesKey, user)
    local computedAt = packed and tonumber(string.match(packed, '^[^|]*|[^|]*|([^|]*)')) or 0
    if computedAt > cutoff then
      redis.call('ZADD', offlineKey, computedAt, user)
    else
      if packed then
        redis.call('HDEL', badgesKey, user)
        expired = expired + 1
      end
      redis.call('ZREM', offlineKey, user)
    end
  end
end
return expired
