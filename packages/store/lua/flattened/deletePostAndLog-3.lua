--[[
  Delete a post (known or not), keep a tombstone so a late ingest cannot revive it, and append
  its `delete` event to the post log in the same step (a standalone Redis, where every key is
  local): no failure can leave a post removed and the removal not logged.
  KEYS[1] posts      ZSET   post id → ts
  KEYS[2] deleted    ZSET   post id → time its tombstone may be forgotten after
  KEYS[3] log        STREAM the post log (fields as appendEvents-1.lua writes them)
  ARGV[1] author
  ARGV[2] post id
  ARGV[3] now
  ARGV[4] minTs      entries at or before it are outside the lookback
  ARGV[5] maxlen     approximate cap of the log
  Returns the ts of the stored post it removed, or nil when none was stored
]]
--[[
  Delete a post of one author (known or not), keep a tombstone so a late ingest cannot revive
  it, and trim the author's keys to the lookback window. Returns the ts of the stored post it
  removed, or nil when none was stored.
  unloggedKey (nil when the caller logs in the same script) is the author's ZSET of events not
  yet in the post log (ingestAuthorPosts.lua): a removal is marked "d:<id>" there until its
  caller appends it, and a retry that finds the mark returns its ts again, to append it.
]]
local function deleteAuthorPost(postsKey, deletedKey, unloggedKey, id, now, minTs)
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
  if unloggedKey then
    redis.call('ZREMRANGEBYSCORE', unloggedKey, '-inf', minTs)
    if removed == 1 then
      redis.call('ZREM', unloggedKey, 'p:' .. id)
      redis.call('ZADD', unloggedKey, ts, 'd:' .. id)
      return ts
    end
    return redis.call('ZSCORE', unloggedKey, 'd:' .. id)
  end
  if removed == 1 then
    return ts
  end
  return nil
end
local ts = deleteAuthorPost(KEYS[1], KEYS[2], nil, ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4]))
if ts then
  redis.call('XADD', KEYS[3], 'MAXLEN', '~', ARGV[5], '*',
    'k', 'delete', 'a', ARGV[1], 'i', ARGV[2], 't', ts)
end
return ts
