--[[
  Store posts of one author, idempotently, and trim the author's index, tombstones, topics and
  unlogged markers to the lookback window. The triples (post id, ts, topics) are
  args[first..last], topics space-separated ("" for none); one outcome per triple is appended
  to `outcomes`: 1 stored now · 0 stored before (duplicate) · -1 ignored (outside the lookback,
  or deleted) · 2 stored before and its event not logged yet.
  A post stored now with topics keeps them in topicsKey (HASH post id → topics), for as long as
  the post or its tombstone: the first stored topics win, and a delete finds the topic windows
  to leave.
  unloggedKey (nil when the caller logs in the same script) is the author's ZSET of events
  stored but not yet in the post log ("p:<id>" / "d:<id>" → the post's ts): a post stored now
  is marked there until its caller appends it, so a retry of a call cut in between finds it
  (outcome 2) and appends it.
]]
--- @include "trimAuthorTopics"
local function ingestAuthorPosts(postsKey, deletedKey, unloggedKey, topicsKey, minTs, args, first, last, outcomes)
  for i = first, last, 3 do
    local id = args[i]
    local ts = tonumber(args[i + 1])
    local tomb = redis.call('ZSCORE', deletedKey, id)
    if ts <= minTs or (tomb and tonumber(tomb) > minTs) then
      outcomes[#outcomes + 1] = -1
    elseif redis.call('ZADD', postsKey, 'NX', ts, id) == 1 then
      if args[i + 2] ~= '' then redis.call('HSET', topicsKey, id, args[i + 2]) end
      if unloggedKey then redis.call('ZADD', unloggedKey, ts, 'p:' .. id) end
      outcomes[#outcomes + 1] = 1
    elseif unloggedKey and redis.call('ZSCORE', unloggedKey, 'p:' .. id) then
      outcomes[#outcomes + 1] = 2
    else
      outcomes[#outcomes + 1] = 0
    end
  end
  trimAuthorTopics(postsKey, deletedKey, topicsKey, minTs)
  redis.call('ZREMRANGEBYSCORE', postsKey, '-inf', minTs)
  redis.call('ZREMRANGEBYSCORE', deletedKey, '-inf', minTs)
  if unloggedKey then redis.call('ZREMRANGEBYSCORE', unloggedKey, '-inf', minTs) end
end
