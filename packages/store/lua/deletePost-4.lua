--[[
  Delete a post (known or not) and keep a tombstone so a late ingest cannot revive it (Redis
  Cluster: the post log and the topic windows are in other slots, so the caller removes it from
  the topic windows, appends the delete, then clears the marker with ZREM).
  KEYS[1] posts      ZSET  post id → ts
  KEYS[2] deleted    ZSET  post id → time its tombstone may be forgotten after
  KEYS[3] unlogged   ZSET  "p:<id>" / "d:<id>" → ts: events stored here, not yet in the post log
  KEYS[4] topics     HASH  post id → its topics, space-separated
  ARGV[1] post id
  ARGV[2] now
  ARGV[3] minTs      entries at or before it are outside the lookback
  Returns { ts of the post to log a delete for (removed now, or by an earlier call whose event
  is not logged yet) or false, the post's topics or false }
]]
--- @include "deleteAuthorPost"
local ts, topics = deleteAuthorPost(KEYS[1], KEYS[2], KEYS[3], KEYS[4], ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]))
return { ts or false, topics or false }
