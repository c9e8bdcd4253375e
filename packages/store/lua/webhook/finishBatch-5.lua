--[[
  Offline delivery: forgets a batch that was delivered (its users' delivery time recorded) or
  dead-lettered (ARGV[2] = 0: no delivery time).
  KEYS[1] retry    ZSET  batch id → next attempt
  KEYS[2] batches  HASH  batch id → body
  KEYS[3] attempts HASH  batch id → requests started
  KEYS[4] pending  HASH  user → batch id
  KEYS[5] last     ZSET  user → last delivery (ms), trimmed to the interval
  ARGV[1] batch id · ARGV[2] delivered at (0: not delivered) · ARGV[3] minimum interval
  ARGV[4..] the batch's users
  Returns 1 when the batch was still stored, 0 when another sender finished it
]]
local retry, batches, attempts, pending, last = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local id, deliveredAt = ARGV[1], tonumber(ARGV[2])
local stored = redis.call('HDEL', batches, id)
redis.call('HDEL', attempts, id)
redis.call('ZREM', retry, id)
for i = 4, #ARGV do
  local user = ARGV[i]
  if redis.call('HGET', pending, user) == id then
    redis.call('HDEL', pending, user)
  end
  if deliveredAt > 0 and stored == 1 then
    redis.call('ZADD', last, 'GT', deliveredAt, user)
  end
end
if deliveredAt > 0 then
  redis.call('ZREMRANGEBYSCORE', last, '-inf', '(' .. (deliveredAt - tonumber(ARGV[3])))
end
return stored
