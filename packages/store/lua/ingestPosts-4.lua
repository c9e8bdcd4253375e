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
--- @include "ingestAuthorPosts"
local outcomes = {}
ingestAuthorPosts(KEYS[1], KEYS[2], KEYS[3], KEYS[4], tonumber(ARGV[1]), ARGV, 2, #ARGV, outcomes)
return outcomes
