--[[
  Store posts of one author, idempotently, and trim the index to the lookback window.
  KEYS[1] posts      ZSET  post id → ts
  KEYS[2] deleted    ZSET  post id → time its tombstone may be forgotten after
  ARGV[1] minTs      posts at or before it are outside the lookback
  ARGV[2..] pairs of (post id, ts)
  Returns one outcome per pair: 1 stored now · 0 stored before (duplicate) · -1 ignored
]]
--- @include "ingestAuthorPosts"
local outcomes = {}
ingestAuthorPosts(KEYS[1], KEYS[2], tonumber(ARGV[1]), ARGV, 2, #ARGV, outcomes)
return outcomes
