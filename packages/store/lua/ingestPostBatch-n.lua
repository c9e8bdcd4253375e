--[[
  Store the posts of many authors in one call (a standalone Redis, where every key is local),
  each author's as ingestPosts-2.lua does. Takes a key count per call: two keys per author.
  KEYS[2k-1] posts    ZSET  author k's post id → ts
  KEYS[2k]   deleted  ZSET  author k's post id → time its tombstone may be forgotten after
  ARGV[1] minTs      posts at or before it are outside the lookback
  ARGV[2..] per author, in key order: n, then n pairs of (post id, ts)
  Returns one outcome per pair, in argument order: 1 stored now · 0 duplicate · -1 ignored
]]
--- @include "ingestAuthorPosts"
local minTs = tonumber(ARGV[1])
local outcomes = {}
local arg = 2
for k = 1, #KEYS, 2 do
  local n = tonumber(ARGV[arg])
  ingestAuthorPosts(KEYS[k], KEYS[k + 1], minTs, ARGV, arg + 1, arg + 2 * n, outcomes)
  arg = arg + 1 + 2 * n
end
return outcomes
