--[[
  Delete a post (known or not) and keep a tombstone so a late ingest cannot revive it.
  KEYS[1] posts      ZSET  post id → ts
  KEYS[2] deleted    ZSET  post id → time its tombstone may be forgotten after
  ARGV[1] post id
  ARGV[2] now
  ARGV[3] minTs      entries at or before it are outside the lookback
  Returns the ts of the stored post it removed, or nil when none was stored
]]
local postsKey = KEYS[1]
local deletedKey = KEYS[2]
local id = ARGV[1]
local now = tonumber(ARGV[2])
local minTs = tonumber(ARGV[3])

local ts = redis.call('ZSCORE', postsKey, id)
local keepUntil = now
if ts and tonumber(ts) > now then
  keepUntil = tonumber(ts)
end
-- A repeated delete must not shorten the tombstone a post stamped ahead of now got.
local tomb = redis.call('ZSCORE', deletedKey, id)
if tomb and tonumber(tomb) > keepUntil then
  keepUntil = tonumber(tomb)
end
local removed = redis.call('ZREM', postsKey, id)
redis.call('ZADD', deletedKey, keepUntil, id)
redis.call('ZREMRANGEBYSCORE', postsKey, '-inf', minTs)
redis.call('ZREMRANGEBYSCORE', deletedKey, '-inf', minTs)
if removed == 1 then
  return ts
end
return nil
