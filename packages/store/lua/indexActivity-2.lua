--[[
  Records conversations' last activity in one user's bounded activity index, guarded by seq (an
  older or repeated message changes nothing), and trims the index to its most recent entries.
  Score = -lastTs, so ZRANGE from 0 is newest first and equal scores come by id ascending.
  KEYS[1] activity ZSET  conversation → -lastTs
  KEYS[2] seqs     HASH  conversation → the seq its score is from; "~trimmed" once a trim dropped
                         an entry (the index may then miss conversations: a read rebuilds it)
  ARGV[1] size the index is trimmed to
  ARGV from 2, per conversation: id, seq, lastTs
  Returns the number of entries written
]]
local activity, seqs = KEYS[1], KEYS[2]
local size = tonumber(ARGV[1])
local written = 0
for i = 2, #ARGV, 3 do
  local conversation, seq = ARGV[i], tonumber(ARGV[i + 1])
  local had = redis.call('HGET', seqs, conversation)
  if not had or tonumber(had) < seq or redis.call('ZSCORE', activity, conversation) == false then
    redis.call('HSET', seqs, conversation, ARGV[i + 1])
    redis.call('ZADD', activity, -tonumber(ARGV[i + 2]), conversation)
    written = written + 1
  end
end
if redis.call('ZCARD', activity) > size then
  local dropped = redis.call('ZRANGE', activity, size, -1)
  for j = 1, #dropped, 1000 do
    local part = { unpack(dropped, j, math.min(j + 999, #dropped)) }
    redis.call('ZREM', activity, unpack(part))
    redis.call('HDEL', seqs, unpack(part))
  end
  redis.call('HSET', seqs, '~trimmed', '1')
end
return written
