--[[
  What a cold start reads of one user's own keys (readUserInputs-9), from KEYS[base + 1] on:
  follows STRING · topics STRING (ids joined by ',') · cursors HASH · marks HASH ·
  conversations SET · counter state HASH · events ZSET of up to three kinds (fewer kinds repeat
  a key; it is not read).
  Returns { follows or false, topics or false, readAt or false, marks as HGETALL returns them,
  conversation ids, { watermark, count of each kind } }
]]
--- @include "countUserCounters"
local function userInputsAt(base, feedField, kinds, windowMs)
  local eventsKeys = {}
  for i = 1, #kinds do
    eventsKeys[i] = KEYS[base + 6 + i]
  end
  return {
    redis.call('GET', KEYS[base + 1]),
    redis.call('GET', KEYS[base + 2]),
    redis.call('HGET', KEYS[base + 3], feedField),
    redis.call('HGETALL', KEYS[base + 4]),
    redis.call('SMEMBERS', KEYS[base + 5]),
    countUserCounters(KEYS[base + 6], eventsKeys, kinds, windowMs),
  }
end
