--[[
  Rewrites one user's activity index from their memberships (after trims and departures left it
  with fewer entries than a read serves): the most recent `size` are kept, "~trimmed" set when
  more were given.
  KEYS[1] activity ZSET  conversation → -lastTs
  KEYS[2] seqs     HASH  conversation → seq; "~trimmed"
  ARGV[1] size
  ARGV from 2, per conversation, newest first: id, seq, lastTs
  Returns the number of entries kept
]]
local activity, seqs = KEYS[1], KEYS[2]
local size = tonumber(ARGV[1])
redis.call('DEL', activity, seqs)
local kept = 0
for i = 2, #ARGV, 3 do
  if kept == size then
    redis.call('HSET', seqs, '~trimmed', '1')
    break
  end
  redis.call('HSET', seqs, ARGV[i], ARGV[i + 1])
  redis.call('ZADD', activity, -tonumber(ARGV[i + 2]), ARGV[i])
  kept = kept + 1
end
return kept
