--[[
  Store posts of one author, idempotently, and trim the index to the lookback window (Redis
  Cluster: the post log and the topic windows are in other slots, so the caller adds to the
  topic windows and appends what this stored, then clears the markers with ZREM).
  KEYS[1] posts      ZSET  post id → ts
  KEYS[2] deleted    ZSET  post id → time its tombstone may be forgotten after
  KEYS[3] unlogged   ZSET  "p:<id>" / "d:<id>" → ts: events stored here, not yet in the post log
  KEYS[4] topics     HASH  post id → its topics, space-separated
  ARGV[1] minTs      posts at or before it are outside the lookback
  ARGV[2..] triples of (post id, ts, topics space-separated or "")
  Returns one outcome per triple: 1 stored now · 0 stored before (duplicate) · -1 ignored ·
  2 stored before, its event not logged yet (append it)
]]
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
local outcomes = {}
ingestAuthorPosts(KEYS[1], KEYS[2], KEYS[3], KEYS[4], tonumber(ARGV[1]), ARGV, 2, #ARGV, outcomes)
return outcomes
