--[[
  Offline delivery: stores a batch before its first request, so whichever sender is alive can
  retry it after the lease, and ends the lease of the users it took (the ones it dropped too:
  they came online).
  KEYS[1] inflight ZSET  user → lease expiry
  KEYS[2] leased   HASH  user → reasons
  KEYS[3] batches  HASH  batch id → request body
  KEYS[4] attempts HASH  batch id → requests started
  KEYS[5] retry    ZSET  batch id → next attempt, or the end of the current attempt's lease
  KEYS[6] pending  HASH  user → batch id
  ARGV[1] batch id ("" when every user was dropped) · ARGV[2] body · ARGV[3] lease expiry
  ARGV[4] n, the number of users in the batch · ARGV[5 .. 4+n] them · then the dropped users
  Returns the number of users whose lease was still this sender's
]]
local inflight, leased, batches, attempts, retry, pending = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local id, n = ARGV[1], tonumber(ARGV[4])
if id ~= '' then
  redis.call('HSET', batches, id, ARGV[2])
  redis.call('HSET', attempts, id, 1)
  redis.call('ZADD', retry, ARGV[3], id)
end
local held = 0
for i = 5, #ARGV do
  local user = ARGV[i]
  held = held + redis.call('ZREM', inflight, user)
  redis.call('HDEL', leased, user)
  if i <= 4 + n then
    redis.call('HSET', pending, user, id)
  end
end
return held
