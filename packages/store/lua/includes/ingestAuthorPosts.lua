--[[
  Store posts of one author, idempotently, and trim the author's index, tombstones and unlogged
  markers to the lookback window. The pairs (post id, ts) are args[first..last]; one outcome per
  pair is appended to `outcomes`: 1 stored now · 0 stored before (duplicate) · -1 ignored
  (outside the lookback, or deleted) · 2 stored before and its event not logged yet.
  unloggedKey (nil when the caller logs in the same script) is the author's ZSET of events
  stored but not yet in the post log ("p:<id>" / "d:<id>" → the post's ts): a post stored now
  is marked there until its caller appends it, so a retry of a call cut in between finds it
  (outcome 2) and appends it.
]]
local function ingestAuthorPosts(postsKey, deletedKey, unloggedKey, minTs, args, first, last, outcomes)
  for i = first, last, 2 do
    local id = args[i]
    local ts = tonumber(args[i + 1])
    local tomb = redis.call('ZSCORE', deletedKey, id)
    if ts <= minTs or (tomb and tonumber(tomb) > minTs) then
      outcomes[#outcomes + 1] = -1
    elseif redis.call('ZADD', postsKey, 'NX', ts, id) == 1 then
      if unloggedKey then redis.call('ZADD', unloggedKey, ts, 'p:' .. id) end
      outcomes[#outcomes + 1] = 1
    elseif unloggedKey and redis.call('ZSCORE', unloggedKey, 'p:' .. id) then
      outcomes[#outcomes + 1] = 2
    else
      outcomes[#outcomes + 1] = 0
    end
  end
  redis.call('ZREMRANGEBYSCORE', postsKey, '-inf', minTs)
  redis.call('ZREMRANGEBYSCORE', deletedKey, '-inf', minTs)
  if unloggedKey then redis.call('ZREMRANGEBYSCORE', unloggedKey, '-inf', minTs) end
end
