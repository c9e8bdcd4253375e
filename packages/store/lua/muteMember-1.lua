--[[
  Mutes or unmutes a member's conversation; the count stays, only the total leaves it out.
  KEYS[1] members  HASH  member → "<readSeq>" or "<readSeq>m"
  ARGV[1] member
  ARGV[2] "1" to mute, "0" to unmute
  Returns 1, or 0 when ARGV[1] is not a member
]]
local member = redis.call('HGET', KEYS[1], ARGV[1])
if not member then
  return 0
end
local readText = string.match(member, '^%d+')
redis.call('HSET', KEYS[1], ARGV[1], readText .. (ARGV[2] == '1' and 'm' or ''))
return 1
