--[[
  Offline delivery: leases up to ARGV[3] users whose delivery is due to the calling sender. A
  user whose lease ran out (their sender died before storing the batch) is queued again first. A
  due user who is leased or in a batch not yet delivered waits another interval: they keep one
  delivery at a time; one delivered less than an interval ago waits for the interval's end.
  KEYS[1] due      ZSET  user → due time (ms)
  KEYS[2] reasons  HASH  user → reasons of the queued entry
  KEYS[3] since    ZSET  user → when queued (ms)
  KEYS[4] inflight ZSET  user → lease expiry (ms)
  KEYS[5] leased   HASH  user → reasons of the leased entry
  KEYS[6] pending  HASH  user → id of their batch not yet delivered
  KEYS[7] last     ZSET  user → last delivery (ms): a user queued while their batch was being
                         delivered is due an interval after it
  KEYS[8] items    HASH  user → what caused their increase, JSON texts joined by \30 (kept
                         while leased: storeBatch forgets them)
  KEYS[9] shown    HASH  user → "total,seq" last delivered
  ARGV[1] now · ARGV[2] lease expiry · ARGV[3] limit · ARGV[4] minimum interval
  Returns { user, reasons, items ("" none), shown ("" never delivered), user, … }
]]
local due, reasons, since, inflight, leased, pending, last, items, shown =
  KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8], KEYS[9]
local now, leaseUntil, limit, interval = tonumber(ARGV[1]), ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
for _, user in ipairs(redis.call('ZRANGEBYSCORE', inflight, '-inf', now, 'LIMIT', 0, 1000)) do
  redis.call('ZREM', inflight, user)
  local lost = redis.call('HGET', leased, user) or ''
  redis.call('HDEL', leased, user)
  local queued = redis.call('HGET', reasons, user)
  if queued then
    for reason in string.gmatch(lost, '[^,]+') do
      if not string.find(',' .. queued .. ',', ',' .. reason .. ',', 1, true) then
        queued = queued .. ',' .. reason
      end
    end
    redis.call('HSET', reasons, user, queued)
  else
    redis.call('HSET', reasons, user, lost)
  end
  redis.call('ZADD', due, 'LT', now, user)
  redis.call('ZADD', since, 'NX', now, user)
end
local taken = {}
local candidates = redis.call('ZRANGEBYSCORE', due, '-inf', now, 'LIMIT', 0, limit)
for _, user in ipairs(candidates) do
  local delivered = tonumber(redis.call('ZSCORE', last, user) or '-1')
  if redis.call('ZSCORE', inflight, user) or redis.call('HEXISTS', pending, user) == 1 then
    redis.call('ZADD', due, now + interval, user)
  elseif delivered >= 0 and delivered + interval > now then
    redis.call('ZADD', due, delivered + interval, user)
  else
    local queued = redis.call('HGET', reasons, user) or ''
    redis.call('ZREM', due, user)
    redis.call('ZREM', since, user)
    redis.call('HDEL', reasons, user)
    redis.call('ZADD', inflight, leaseUntil, user)
    redis.call('HSET', leased, user, queued)
    taken[#taken + 1] = user
    taken[#taken + 1] = queued
    taken[#taken + 1] = redis.call('HGET', items, user) or ''
    taken[#taken + 1] = redis.call('HGET', shown, user) or ''
  end
end
return taken
