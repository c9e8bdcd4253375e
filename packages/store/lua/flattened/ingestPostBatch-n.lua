--[[
  Store the posts of many authors in one call (a standalone Redis, where every key is local),
  each author's as ingestPosts-2.lua does. Takes a key count per call: two keys per author.
  KEYS[2k-1] posts    ZSET  author k's post id → ts
  KEYS[2k]   deleted  ZSET  author k's post id → time its tombstone may be forgotten after
  ARGV[1] minTs      posts at or before it are outside the lookback
  ARGV[2..] per author, in key order: n, then n pairs of (post id, ts)
  Returns one outcome per pair, in argument order: 1 stored now · 0 duplicate · -1 ignored
]]
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
local minTs = tonumber(ARGV[1])
local outcomes = {}
local arg = 2
for k = 1, #KEYS, 2 do
  local n = tonumber(ARGV[arg])
  ingestAuthorPosts(KEYS[k], KEYS[k + 1], minTs, ARGV, arg + 1, arg + 2 * n, outcomes)
  arg = arg + 1 + 2 * n
end
return outcomes
