--[[
  Clears a member's unread, guarded by the seq the client acknowledges and atomic against
  ingestMessages-2.lua: readSeq := max(readSeq, min(seq, maxSeq)); without a seq, maxSeq.
  KEYS[1] meta     HASH  maxSeq · …
  KEYS[2] members  HASH  member → "<readSeq>" or "<readSeq>m"
  ARGV[1] member
  ARGV[2] acknowledged seq, or "-" for everything
  Returns the cursor after the move (decimal text), or nil when ARGV[1] is not a member
]]
local member = redis.call('HGET', KEYS[2], ARGV[1])
if not member then
  return nil
end
local readText = string.match(member, '^%d+')
local target = redis.call('HGET', KEYS[1], 'maxSeq') or '0'
if ARGV[2] ~= '-' and tonumber(ARGV[2]) < tonumber(target) then
  target = ARGV[2]
end
if tonumber(target) > tonumber(readText) then
  local mute = string.sub(member, -1) == 'm' and 'm' or ''
  redis.call('HSET', KEYS[2], ARGV[1], target .. mute)
  readText = target
end
return readText
