--[[
  Delete a post (known or not), keep a tombstone so a late ingest cannot revive it, and append
  its `delete` event to the post log in the same step (a standalone Redis, where every key is
  local): no failure can leave a post removed and the removal not logged. The caller removes it
  from its topic windows after (a retry finds the topics again).
  KEYS[1] posts      ZSET   post id → ts
  KEYS[2] deleted    ZSET   post id → time its tombstone may be forgotten after
  KEYS[3] topics     HASH   post id → its topics, space-separated
  KEYS[4] log        STREAM the post log (fields as appendEvents-1.lua writes them)
  ARGV[1] author
  ARGV[2] post id
  ARGV[3] now
  ARGV[4] minTs      entries at or before it are outside the lookback
  ARGV[5] maxlen     approximate cap of the log
  Returns { ts of the stored post it removed or false, the post's topics or false }
]]
--- @include "deleteAuthorPost"
local ts, topics = deleteAuthorPost(KEYS[1], KEYS[2], nil, KEYS[3], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4]))
if ts then
  redis.call('XADD', KEYS[4], 'MAXLEN', '~', ARGV[5], '*',
    'k', 'delete', 'a', ARGV[1], 'i', ARGV[2], 't', ts)
end
return { ts or false, topics or false }
