--[[
  Store a user's badge state; move to the next version only when the counts differ.
  KEYS[1] badge      HASH  _e epoch · _v version · _at computedAt · one field per non-zero count
  ARGV[1] epoch to use when no state is stored
  ARGV[2] computedAt
  ARGV[3..] pairs of (count name, value), only non-zero ones
  Returns { epoch, version, changed (1/0) }
]]
local badgeKey = KEYS[1]
local freshEpoch = ARGV[1]
local computedAt = ARGV[2]

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

local same = epoch ~= nil and oldCount == (#ARGV - 2) / 2
if same then
  for i = 3, #ARGV, 2 do
    if old[ARGV[i]] ~= ARGV[i + 1] then
      same = false
      break
    end
  end
end

if same then
  redis.call('HSET', badgeKey, '_at', computedAt)
  return { epoch, version, 0 }
end

if epoch == nil then
  epoch = freshEpoch
end
version = version + 1
redis.call('DEL', badgeKey)
redis.call('HSET', badgeKey, '_e', epoch, '_v', version, '_at', computedAt, unpack(ARGV, 3))
return { epoch, version, 1 }
