--[[
  Delete a post (known or not), keep a tombstone so a late ingest cannot revive it, and append
  its `delete` event to the post log in the same step (a standalone Redis, where every key is
  local): no failure can leave a post removed and the removal not logged. The caller removes it
  from its topic windows after (a retry finds the topics again).
  KEYS[1] posts      ZSET   post id → ts
  KEYS[2] deleted    ZSET   post id → time its tombstone may be forgotten after
  KEYS[3] topics     HASH   post id → its topics, space-separated
  KEYS[4] log        STREAM the post log (fields as appendEvents-1.lua writes them)
  ARGV[1] author
  ARGV[2] post id
  ARGV[3] now
  ARGV[4] minTs      entries at or before it are outside the lookback
  ARGV[5] maxlen     approximate cap of the log
  Returns { ts of the stored post it removed or false, the post's topics or false }
]]
--[[
  Delete a post of one author (known or not), keep a tombstone so a late ingest cannot revive
  it, and trim the author's keys to the lookback window. Returns the ts of the stored post it
  removed (or nil when none was stored) and the post's topics (or nil): the topics stay in
  topicsKey for the tombstone's life, so a retried delete finds the topic windows to leave again.
  unloggedKey (nil when the caller logs in the same script) is the author's ZSET of events not
  yet in the post log (ingestAuthorPosts.lua): a removal is marked "d:<id>" there until its
  caller appends it, and a retry that finds the mark returns its ts again, to append it.
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
local function deleteAuthorPost(postsKey, deletedKey, unloggedKey, topicsKey, id, now, minTs)
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
  local topics = redis.call('HGET', topicsKey, id)
  trimAuthorTopics(postsKey, deletedKey, topicsKey, minTs)
  redis.call('ZREMRANGEBYSCORE', postsKey, '-inf', minTs)
  redis.call('ZREMRANGEBYSCORE', deletedKey, '-inf', minTs)
  if unloggedKey then
    redis.call('ZREMRANGEBYSCORE', unloggedKey, '-inf', minTs)
    if removed == 1 then
      redis.call('ZREM', unloggedKey, 'p:' .. id)
      redis.call('ZADD', unloggedKey, ts, 'd:' .. id)
      return ts, topics
    end
    return redis.call('ZSCORE', unloggedKey, 'd:' .. id), topics
  end
  if removed == 1 then
    return ts, topics
  end
  return nil, topics
end
local ts, topics = deleteAuthorPost(KEYS[1], KEYS[2], nil, KEYS[3], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4]))
if ts then
  redis.call('XADD', KEYS[4], 'MAXLEN', '~', ARGV[5], '*',
    'k', 'delete', 'a', ARGV[1], 'i', ARGV[2], 't', ts)
end
return { ts or false, topics or false }
