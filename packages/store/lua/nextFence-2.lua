--[[
  A new owner's fencing token for one pool, never issued before even when Redis lost the fence
  key or part of its history (a restart without persistence, the last second of an AOF
  `everysec`, eviction, a replica promoted before it had the last token).
  The token is the larger of the stored token + 1 and the server's clock in microseconds since
  the epoch (TIME): a token issued after a data loss is issued at a later microsecond than any
  before it, so it exceeds them all while the clock of the server answering does not go back
  across the loss (docs/redis-keys.md). Microseconds now (~1.8e15) are below 2^53: exact as a
  Lua number and as a JavaScript number.
  The pool's touched set starts over with the token, in the same step.
  KEYS[1] fence    STRING  the pool's current token
  KEYS[2] touched  SET     emptied
  Returns the token, as a string of decimal digits
]]
local fenceKey, touchedKey = KEYS[1], KEYS[2]
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000000 + tonumber(time[2])
local token = math.max(tonumber(redis.call('GET', fenceKey) or '0') + 1, now)
-- %.0f: Lua's default number formatting keeps 14 digits.
local text = string.format('%.0f', token)
redis.call('SET', fenceKey, text)
redis.call('DEL', touchedKey)
return text
