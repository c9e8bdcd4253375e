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
--- @include "ingestAuthorPosts"
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
