--[[
  Move a read cursor forward only.
  KEYS[1] cursors    HASH  cursor name → value
  ARGV[1] cursor name
  ARGV[2] target value
  Returns the cursor after the move (as a string, to keep full integer precision)
]]
local cursorsKey = KEYS[1]
local field = ARGV[1]
local target = tonumber(ARGV[2])

local current = tonumber(redis.call('HGET', cursorsKey, field))
if current == nil or target > current then
  redis.call('HSET', cursorsKey, field, ARGV[2])
  return ARGV[2]
end
return tostring(redis.call('HGET', cursorsKey, field))
