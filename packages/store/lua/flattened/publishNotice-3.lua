--[[
  Publishes a system notice and logs it in one step: two writes and an append whatever the
  number of users.
  KEYS[1] live     ZSET   notice id → id (score and member)
  KEYS[2] highest  STRING the highest id ever published
  KEYS[3] log      STREAM the shared log
  ARGV[1] notice id (a positive safe integer, as decimal text)
  ARGV[2] maxlen   approximate cap of the log
  ARGV[3] the event as JSON
  Returns 1 when published, 0 when that id is live already
]]
--[[
  Append one event to the shared log (notices, red dots), fields as appendEvents-1.lua writes
  them for RedisChangeLog.appendSharedEvents: k <kind> j <the event as JSON>.
]]
local function appendSharedEvent(logKey, maxlen, kind, json)
  redis.call('XADD', logKey, 'MAXLEN', '~', maxlen, '*', 'k', kind, 'j', json)
end
if redis.call('ZSCORE', KEYS[1], ARGV[1]) then
  return 0
end
redis.call('ZADD', KEYS[1], ARGV[1], ARGV[1])
local highest = redis.call('GET', KEYS[2])
if not highest or tonumber(highest) < tonumber(ARGV[1]) then
  redis.call('SET', KEYS[2], ARGV[1])
end
appendSharedEvent(KEYS[3], ARGV[2], 'notice', ARGV[3])
return 1
