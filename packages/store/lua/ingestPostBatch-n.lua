--[[
  Store the posts of many authors in one call (a standalone Redis, where every key is local),
  each author's as ingestPosts-3.lua does, and append a `post` event for each post stored now to
  the post log in the same step: no failure can leave a post stored and not logged.
  KEYS[2k-1] posts    ZSET   author k's post id → ts
  KEYS[2k]   deleted  ZSET   author k's post id → time its tombstone may be forgotten after
  KEYS[#KEYS] log     STREAM the post log (fields as appendEvents-1.lua writes them)
  ARGV[1] minTs      posts at or before it are outside the lookback
  ARGV[2] maxlen     approximate cap of the log
  ARGV[3..] per author, in key order: author, n, then n pairs of (post id, ts)
  Returns one outcome per pair, in argument order: 1 stored now · 0 duplicate · -1 ignored
]]
--- @include "ingestAuthorPosts"
local minTs = tonumber(ARGV[1])
local maxlen = ARGV[2]
local logKey = KEYS[#KEYS]
local outcomes = {}
local arg = 3
for k = 1, #KEYS - 1, 2 do
  local author = ARGV[arg]
  local n = tonumber(ARGV[arg + 1])
  local from = #outcomes
  ingestAuthorPosts(KEYS[k], KEYS[k + 1], nil, minTs, ARGV, arg + 2, arg + 1 + 2 * n, outcomes)
  for j = 1, n do
    if outcomes[from + j] == 1 then
      local at = arg + 2 * j
      redis.call('XADD', logKey, 'MAXLEN', '~', maxlen, '*',
        'k', 'post', 'a', author, 'i', ARGV[at], 't', ARGV[at + 1])
    end
  end
  arg = arg + 2 + 2 * n
end
return outcomes
