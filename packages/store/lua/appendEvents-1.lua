--[[
  Append a batch of events to a change log in one step, so readers never see part of it.
  KEYS[1] log        STREAM  one entry per event
  ARGV[1] maxlen     approximate cap of the log
  ARGV[2..] per event: n, then n strings (field, value, field, value, …)
  Returns the id of the last entry added
]]
local logKey = KEYS[1]
local maxlen = ARGV[1]

local last = nil
local i = 2
while i <= #ARGV do
  local n = tonumber(ARGV[i])
  last = redis.call('XADD', logKey, 'MAXLEN', '~', maxlen, '*', unpack(ARGV, i + 1, i + n))
  i = i + n + 1
end
return last
