--[[
  Store posts of one author, idempotently, and trim the index to the lookback window.
  KEYS[1] posts      ZSET  post id → ts
  KEYS[2] deleted    ZSET  post id → time its tombstone may be forgotten after
  ARGV[1] minTs      posts at or before it are outside the lookback
  ARGV[2..] pairs of (post id, ts)
  Returns one outcome per pair: 1 stored now · 0 stored before (duplicate) · -1 ignored
]]
local postsKey = KEYS[1]
local deletedKey = KEYS[2]
local minTs = tonumber(ARGV[1])

local outcomes = {}
for i = 2, #ARGV, 2 do
  local id = ARGV[i]
  local ts = tonumber(ARGV[i + 1])
  local tomb = redis.call('ZSCORE', deletedKey, id)
  if ts <= minTs or (tomb and tonumber(tomb) > minTs) then
    outcomes[#outcomes + 1] = -1
  else
    outcomes[#outcomes + 1] = redis.call('ZADD', postsKey, 'NX', ts, id)
  end
end
redis.call('ZREMRANGEBYSCORE', postsKey, '-inf', minTs)
redis.call('ZREMRANGEBYSCORE', deletedKey, '-inf', minTs)
return outcomes
