--[[
  Publishes a system notice: two writes whatever the number of users.
  KEYS[1] live     ZSET  notice id → id (score and member)
  KEYS[2] highest  STRING the highest id ever published
  ARGV[1] notice id (a positive safe integer, as decimal text)
  Returns 1 when published, 0 when that id is live already
]]
if redis.call('ZSCORE', KEYS[1], ARGV[1]) then
  return 0
end
redis.call('ZADD', KEYS[1], ARGV[1], ARGV[1])
local highest = redis.call('GET', KEYS[2])
if not highest or tonumber(highest) < tonumber(ARGV[1]) then
  redis.call('SET', KEYS[2], ARGV[1])
end
return 1
