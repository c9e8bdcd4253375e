--[[
  Store posts of one author, idempotently, and trim the author's index and tombstones to the
  lookback window. The pairs (post id, ts) are args[first..last]; one outcome per pair is
  appended to `outcomes`: 1 stored now · 0 stored before (duplicate) · -1 ignored (outside the
  lookback, or deleted).
]]
local function ingestAuthorPosts(postsKey, deletedKey, minTs, args, first, last, outcomes)
  for i = first, last, 2 do
    local id = args[i]
    local ts = tonumber(args[i + 1])
    local tomb = redis.call('ZSCORE', deletedKey, id)
    if ts <= minTs or (tomb and tonumber(tomb) > minTs) then
      outcomes[#outcomes + 1] = -1
    else
      outcomes[#outcomes + 1] = redis.call('ZADD', postsKey, 'NX', ts, id)
    end
  end
  redis.call('ZREMRANGEBYSCORE', postsKey, '-inf', minTs)
  redis.call('ZREMRANGEBYSCORE', deletedKey, '-inf', minTs)
end
