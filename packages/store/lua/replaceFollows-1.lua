--[[
  Replace the whole follow set in one step, so no reader sees it half written.
  KEYS[1] follows    SET   authors the user follows
  ARGV[1..n] authors (already de-duplicated and within the cap by the caller)
  Returns the new set size
]]
local followsKey = KEYS[1]

redis.call('DEL', followsKey)
local chunk = 1000
for i = 1, #ARGV, chunk do
  redis.call('SADD', followsKey, unpack(ARGV, i, math.min(i + chunk - 1, #ARGV)))
end
return #ARGV
