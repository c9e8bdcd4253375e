--[[
  Offline delivery: stores a batch before its first request, so whichever sender is alive can
  retry it after the lease, records what each of its users is shown (so a retry resends the same
  seq and the next delivery starts from it), and ends the lease of the users it took (the ones
  it left out too: they came online, or their total is what their phone shows), in one step.
  KEYS[1] inflight ZSET  user → lease expiry
  KEYS[2] leased   HASH  user → reasons
  KEYS[3] batches  HASH  batch id → request body
  KEYS[4] attempts HASH  batch id → requests started
  KEYS[5] retry    ZSET  batch id → next attempt, or the end of the current attempt's lease
  KEYS[6] pending  HASH  user → batch id
  KEYS[7] items    HASH  user → what caused their increase: forgotten, now in the body
  KEYS[8] shown    HASH  user → "total,seq" last delivered
  KEYS[9] shownat  ZSET  user → when their shown entry was written (ms), trimmed by trimShown
  ARGV[1] batch id ("" when no user is sent) · ARGV[2] body · ARGV[3] lease expiry · ARGV[4] now
  ARGV[5] n, the number of users in the batch · ARGV[6 .. 5+3n] user, total, seq of each
  · then the users left out
  Returns the number of users whose lease was still this sender's
]]
local inflight, leased, batches, attempts, retry, pending = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local items, shown, shownat = KEYS[7], KEYS[8], KEYS[9]
local id, now, n = ARGV[1], ARGV[4], tonumber(ARGV[5])
if id ~= '' then
  redis.call('HSET', batches, id, ARGV[2])
  redis.call('HSET', attempts, id, 1)
  redis.call('ZADD', retry, ARGV[3], id)
end
local held = 0
local function release(user)
  held = held + redis.call('ZREM', inflight, user)
  redis.call('HDEL', leased, user)
  redis.call('HDEL', items, user)
end
local sentEnd = 5 + 3 * n
for i = 6, sentEnd, 3 do
  local user = ARGV[i]
  release(user)
  redis.call('HSET', pending, user, id)
  redis.call('HSET', shown, user, ARGV[i + 1] .. ',' .. ARGV[i + 2])
  redis.call('ZADD', shownat, now, user)
end
for i = sentEnd + 1, #ARGV do
  release(ARGV[i])
end
return held
