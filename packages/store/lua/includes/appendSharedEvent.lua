--[[
  Append one event to the shared log (notices, red dots), fields as appendEvents-1.lua writes
  them for RedisChangeLog.appendSharedEvents: k <kind> j <the event as JSON>.
]]
local function appendSharedEvent(logKey, maxlen, kind, json)
  redis.call('XADD', logKey, 'MAXLEN', '~', maxlen, '*', 'k', kind, 'j', json)
end
