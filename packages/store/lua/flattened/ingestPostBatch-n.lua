--[[
  Store the posts of many authors in one call (a standalone Redis, where every key is local),
  each author's as ingestPosts-4.lua does, add each post stored now to the windows of its
  topics, and append a `post` event for it to the post log in the same step: no failure can
  leave a post stored and not logged, or not in its topics' windows.
  KEYS[3k-2] posts    ZSET   author k's post id → ts
  KEYS[3k-1] deleted  ZSET   author k's post id → time its tombstone may be forgotten after
  KEYS[3k]   topics   HASH   author k's post id → its topics, space-separated
  then m topic windows ZSET  "<author> <id> <topics>" → ts, one per topic named in ARGV[4..]
  KEYS[#KEYS] log     STREAM the post log (fields as appendEvents-1.lua writes them)
  ARGV[1] minTs      posts at or before it are outside the lookback
  ARGV[2] maxlen     approximate cap of the log
  ARGV[3] m          number of topic windows
  ARGV[4..3+m]       the topics of those windows, in key order
  ARGV[4+m..] per author, in key order: author, n, then n triples of (post id, ts, topics)
  Returns one outcome per triple, in argument order: 1 stored now · 0 duplicate · -1 ignored
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
local minTs = tonumber(ARGV[1])
local maxlen = ARGV[2]
local m = tonumber(ARGV[3])
local logKey = KEYS[#KEYS]
local authorKeys = #KEYS - 1 - m
local windowOf = {}
for j = 1, m do
  windowOf[ARGV[3 + j]] = KEYS[authorKeys + j]
end
local outcomes = {}
local arg = 4 + m
for k = 1, authorKeys, 3 do
  local author = ARGV[arg]
  local n = tonumber(ARGV[arg + 1])
  local from = #outcomes
  ingestAuthorPosts(KEYS[k], KEYS[k + 1], nil, KEYS[k + 2], minTs, ARGV, arg + 2, arg + 1 + 3 * n, outcomes)
  for j = 1, n do
    if outcomes[from + j] == 1 then
      local at = arg + 2 + 3 * (j - 1)
      local id, ts, topics = ARGV[at], ARGV[at + 1], ARGV[at + 2]
      if topics == '' then
        redis.call('XADD', logKey, 'MAXLEN', '~', maxlen, '*',
          'k', 'post', 'a', author, 'i', id, 't', ts)
      else
        local member = author .. ' ' .. id .. ' ' .. topics
        for topic in string.gmatch(topics, '%S+') do
          local window = windowOf[topic]
          redis.call('ZADD', window, 'NX', ts, member)
          redis.call('ZREMRANGEBYSCORE', window, '-inf', minTs)
        end
        redis.call('XADD', logKey, 'MAXLEN', '~', maxlen, '*',
          'k', 'post', 'a', author, 'i', id, 't', ts, 'o', topics)
      end
    end
  end
  arg = arg + 2 + 3 * n
end
return outcomes
