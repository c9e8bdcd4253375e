--[[
  counter(u, k) of one user's kind, and the watermark between what it counted and what it did
  not: every event counted is stamped at or before max(now, the user's last stamp), every event
  ingested after this count after it (ingestCounters-3 reads `c` and the last stamp).
  KEYS[1]  state   HASH  as ingestCounters-3
  KEYS[2]  events  ZSET  event id → arrivedAt, of the kind
  ARGV[1]  windowMs
  ARGV[2]  kind
  Returns { watermark, count }, the watermark -1 for a user with no counter state (nothing is
  written for them)
]]
--- @include "storeNow"
local stateKey = KEYS[1]
local eventsKey = KEYS[2]
local windowMs = tonumber(ARGV[1])
local kind = ARGV[2]

if redis.call('EXISTS', stateKey) == 0 then
  return { -1, 0 }
end
local now = storeNow()
if now > tonumber(redis.call('HGET', stateKey, 'c') or '0') then
  redis.call('HSET', stateKey, 'c', now)
end
local cutoff = now - windowMs
local readAt = tonumber(redis.call('HGET', stateKey, 'r:' .. kind) or '0')
local last = tonumber(redis.call('HGET', stateKey, 'l') or '0')
redis.call('ZREMRANGEBYSCORE', eventsKey, '-inf', cutoff)
local count = redis.call('ZCOUNT', eventsKey, '(' .. math.max(readAt, cutoff), '+inf')
return { math.max(now, last), count }
