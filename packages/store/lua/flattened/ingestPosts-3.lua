--[[
  Store posts of one author, idempotently, and trim the index to the lookback window (Redis
  Cluster: the post log is in another slot, so the caller appends what this stored, then clears
  the markers with ZREM).
  KEYS[1] posts      ZSET  post id → ts
  KEYS[2] deleted    ZSET  post id → time its tombstone may be forgotten after
  KEYS[3] unlogged   ZSET  "p:<id>" / "d:<id>" → ts: events stored here, not yet in the post log
  ARGV[1] minTs      posts at or before it are outside the lookback
  ARGV[2..] pairs of (post id, ts)
  Returns one outcome per pair: 1 stored now · 0 stored before (duplicate) · -1 ignored ·
  2 stored before, its event not logged yet (append it)
]]
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
local outcomes = {}
ingestAuthorPosts(KEYS[1], KEYS[2], KEYS[3], tonumber(ARGV[1]), ARGV, 2, #ARGV, outcomes)
return outcomes
