--[[
  Delete a post of one author (known or not), keep a tombstone so a late ingest cannot revive
  it, and trim the author's keys to the lookback window. Returns the ts of the stored post it
  removed (or nil when none was stored) and the post's topics (or nil): the topics stay in
  topicsKey for the tombstone's life, so a retried delete finds the topic windows to leave again.
  unloggedKey (nil when the caller logs in the same script) is the author's ZSET of events not
  yet in the post log (ingestAuthorPosts.lua): a removal is marked "d:<id>" there until its
  caller appends it, and a retry that finds the mark returns its ts again, to append it.
]]
--- @include "trimAuthorTopics"
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
