--[[
  One ingest partition's backlog, read on its shard at the server's now.
  KEYS[1] stream   STREAM  <prefix>:ingest:{i}
  KEYS[2] dead     STREAM  <prefix>:ingest:dead{i}
  ARGV[1] group, ARGV[2] the most entries counted when Redis cannot tell the lag itself
  Returns {group exists 0|1, lag, pending, oldest pending id or '', now (ms), dead letters}
]]
--- @include "storeNow"
local dead = redis.call('XLEN', KEYS[2])
local now = storeNow()
if redis.call('EXISTS', KEYS[1]) == 0 then return {0, 0, 0, '', now, dead} end
local info
for _, group in ipairs(redis.call('XINFO', 'GROUPS', KEYS[1])) do
  local fields = {}
  for i = 1, #group, 2 do fields[group[i]] = group[i + 1] end
  if fields['name'] == ARGV[1] then info = fields end
end
if not info then return {0, redis.call('XLEN', KEYS[1]), 0, '', now, dead} end
local lag = info['lag']
if not lag then
  -- Redis 7 cannot tell the lag after deletions inside the undelivered range: count them.
  local undelivered = redis.call(
    'XRANGE', KEYS[1], '(' .. info['last-delivered-id'], '+', 'COUNT', tonumber(ARGV[2]))
  lag = #undelivered
end
local summary = redis.call('XPENDING', KEYS[1], ARGV[1])
local oldest = ''
if summary[1] > 0 then oldest = summary[2] end
return {1, lag, summary[1], oldest, now, dead}
