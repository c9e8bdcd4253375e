--[[
  counter(u, k) of one user's kinds, atomically, and the watermark between what it counted and
  what it did not: every event counted is stamped at or before max(now, the user's last stamp),
  every event ingested after this count after it (ingestCounters-3 reads `c` and the last stamp).
  stateKey     HASH  as ingestCounters-3
  eventsKeys   ZSETs event id → arrivedAt, one per kind of `kinds`, in its order
  Returns { watermark, count of each kind }, the watermark -1 for a user with no counter state
  or when no kind is asked (nothing is written then)
]]
--- @include "storeNow"
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
