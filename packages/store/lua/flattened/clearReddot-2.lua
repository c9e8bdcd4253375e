--[[
  Clears a red dot and logs it in one step.
  KEYS[1] marked   HASH   red dot name → G(name)
  KEYS[2] log      STREAM the shared log
  ARGV[1] name
  ARGV[2] maxlen   approximate cap of the log
  ARGV[3] the event as JSON
  Returns 1 when cleared, 0 when it was not marked
]]
--[[
  Append one event to the shared log (notices, red dots), fields as appendEvents-1.lua writes
  them for RedisChangeLog.appendSharedEvents: k <kind> j <the event as JSON>.
]]
local function appendSharedEvent(logKey, maxlen, kind, json)
  redis.call('XADD', logKey, 'MAXLEN', '~', maxlen, '*', 'k', kind, 'j', json)
end
if redis.call('HDEL', KEYS[1], ARGV[1]) == 0 then
  return 0
end
appendSharedEvent(KEYS[2], ARGV[2], 'reddot', ARGV[3])
return 1
