--[[
  Converts one user's format-1 follow SETs to format-2 strings (RedisKeys' header) in one step,
  so an upgrade keeps the graph. A format-2 list already written (a change after the upgrade)
  keeps its ids, the SET's added after them.
  KEYS[1] legacy authors  SET     · KEYS[2] legacy topics  SET
  KEYS[3] authors         STRING  · KEYS[4] topics         STRING
  Returns the number of SETs converted (0 to 2)
]]
--- @include "followList"
local converted = 0
for pair = 1, 2 do
  local legacyKey, listKey = KEYS[pair], KEYS[pair + 2]
  if redis.call('TYPE', legacyKey).ok == 'set' then
    local list = redis.call('GET', listKey) or ''
    local ids = followListIds(list)
    local has = {}
    for _, id in ipairs(ids) do
      has[id] = true
    end
    for _, id in ipairs(redis.call('SMEMBERS', legacyKey)) do
      if not has[id] then
        ids[#ids + 1] = id
        has[id] = true
      end
    end
    redis.call('SET', listKey, table.concat(ids, ','))
    redis.call('DEL', legacyKey)
    converted = converted + 1
  end
end
return converted
