--[[
  Follow one author, refusing to grow the set past the cap.
  KEYS[1] follows    SET   authors the user follows
  ARGV[1] author
  ARGV[2] cap        integer, most authors the set may hold
  Returns 1 added · 0 already followed · -1 the cap is reached
]]
local followsKey = KEYS[1]
local author = ARGV[1]
local cap = tonumber(ARGV[2])

if redis.call('SISMEMBER', followsKey, author) == 1 then
  return 0
end
if redis.call('SCARD', followsKey) >= cap then
  return -1
end
redis.call('SADD', followsKey, author)
return 1
