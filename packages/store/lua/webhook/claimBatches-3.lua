--[[
  Offline delivery: leases up to ARGV[3] batches whose next attempt is due (a retry, or one whose
  sender died mid-request) to the calling sender, counting the attempt it is about to make.
  KEYS[1] retry    ZSET  batch id → next attempt or lease expiry (ms)
  KEYS[2] batches  HASH  batch id → request body
  KEYS[3] attempts HASH  batch id → requests started
  ARGV[1] now · ARGV[2] lease expiry · ARGV[3] limit
  Returns { id, body, attempt, id, body, attempt, … }
]]
local retry, batches, attempts = KEYS[1], KEYS[2], KEYS[3]
local claimed = {}
for _, id in ipairs(redis.call('ZRANGEBYSCORE', retry, '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[3]))) do
  local body = redis.call('HGET', batches, id)
  if body then
    redis.call('ZADD', retry, ARGV[2], id)
    claimed[#claimed + 1] = id
    claimed[#claimed + 1] = body
    claimed[#claimed + 1] = redis.call('HINCRBY', attempts, id, 1)
  else
    redis.call('ZREM', retry, id)
  end
end
return claimed
