--[[
  readUserInputs-9 of many users in one call, on a standalone Redis (their keys are in many
  slots): nine KEYS per user, in the order readUserInputs-9 takes them.
  ARGV as readUserInputs-9's
  Returns readUserInputs-9's reply of each user, in KEYS' order
]]
--[[
  What a cold start reads of one user's own keys (readUserInputs-9), from KEYS[base + 1] on:
  follows STRING · topics STRING (ids joined by ',') · cursors HASH · marks HASH ·
  conversations SET · counter state HASH · events ZSET of up to three kinds (fewer kinds repeat
  a key; it is not read).
  Returns { follows or false, topics or false, readAt or false, marks as HGETALL returns them,
  conversation ids, { watermark, count of each kind } }
]]
--[[
  counter(u, k) of one user's kinds, atomically, and the watermark between what it counted and
  what it did not: every event counted is stamped at or before max(now, the user's last stamp),
  every event ingested after this count after it (ingestCounters-3 reads `c` and the last stamp).
  stateKey     HASH  as ingestCounters-3
  eventsKeys   ZSETs event id → arrivedAt, one per kind of `kinds`, in its order
  Returns { watermark, count of each kind }, the watermark -1 for a user with no counter state
  or when no kind is asked (nothing is written then)
]]
--[[
  The server's clock, in ms. Presence, routes and node liveness are written and checked on it
  alone, so the clocks of the nodes calling the scripts never meet (docs/redis-keys.md, "One
  clock"). Scripts that call it write their effects, not the script, to replicas and the AOF.
]]
local function storeNow()
  local time = redis.call('TIME')
  return tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
end
local function countUserCounters(stateKey, eventsKeys, kinds, windowMs)
  local reply = { -1 }
  if #kinds == 0 or redis.call('EXISTS', stateKey) == 0 then
    for i = 1, #kinds do
      reply[i + 1] = 0
    end
    return reply
  end
  local now = storeNow()
  if now > tonumber(redis.call('HGET', stateKey, 'c') or '0') then
    redis.call('HSET', stateKey, 'c', now)
  end
  local cutoff = now - windowMs
  reply[1] = math.max(now, tonumber(redis.call('HGET', stateKey, 'l') or '0'))
  for i = 1, #kinds do
    local eventsKey = eventsKeys[i]
    local readAt = tonumber(redis.call('HGET', stateKey, 'r:' .. kinds[i]) or '0')
    redis.call('ZREMRANGEBYSCORE', eventsKey, '-inf', cutoff)
    reply[i + 1] = redis.call('ZCOUNT', eventsKey, '(' .. math.max(readAt, cutoff), '+inf')
  end
  return reply
end
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
local kinds = {}
for i = 3, #ARGV do
  kinds[i - 2] = ARGV[i]
end
local windowMs = tonumber(ARGV[2])
local replies = {}
for base = 0, #KEYS - 9, 9 do
  replies[#replies + 1] = userInputsAt(base, ARGV[1], kinds, windowMs)
end
return replies
