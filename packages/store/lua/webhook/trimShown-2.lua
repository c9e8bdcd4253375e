--[[
  Offline delivery: forgets what bubble delivered to users it has not delivered to since the
  cutoff (the lifecycle's window): a user gone costs nothing. Their next delivery, if any,
  carries `shown` null and a seq still above the last (seqs follow the clock).
  KEYS[1] shown    HASH  user → "total,seq"
  KEYS[2] shownat  ZSET  user → when their shown entry was written (ms)
  ARGV[1] cutoff (ms) · ARGV[2] limit
  Returns the number of users forgotten
]]
local shown, shownat = KEYS[1], KEYS[2]
local old = redis.call('ZRANGEBYSCORE', shownat, '-inf', '(' .. ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
for _, user in ipairs(old) do
  redis.call('HDEL', shown, user)
  redis.call('ZREM', shownat, user)
end
return #old
