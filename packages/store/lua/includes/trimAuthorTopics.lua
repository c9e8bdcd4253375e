--[[
  Forgets the topics of an author's posts and tombstones that leave the lookback window (at or
  before minTs): called before those entries are trimmed from postsKey and deletedKey.
]]
local function trimAuthorTopics(postsKey, deletedKey, topicsKey, minTs)
  if redis.call('EXISTS', topicsKey) == 0 then return end
  local gone = redis.call('ZRANGEBYSCORE', postsKey, '-inf', minTs)
  local tombs = redis.call('ZRANGEBYSCORE', deletedKey, '-inf', minTs)
  for j = 1, #tombs do gone[#gone + 1] = tombs[j] end
  for j = 1, #gone, 1000 do
    redis.call('HDEL', topicsKey, unpack(gone, j, math.min(j + 999, #gone)))
  end
end
