--[[
  Removes a member of a conversation (their cursor and mute). They are owed a `marks` event in
  their pool's log (another slot): put in the unlogged set until the caller appended it.
  KEYS[1] members  HASH  member → "<readSeq>" or "<readSeq>m"
  KEYS[2] unlogged SET   users owed a marks event for this conversation
  ARGV[1] member
  Returns { 1 when removed now else 0, 1 when the member is owed a marks event else 0, the
  member count after (the caller sees the conversation fall to BUBBLE_LARGE_GROUP) }
]]
local removed = redis.call('HDEL', KEYS[1], ARGV[1])
if removed == 1 then
  redis.call('SADD', KEYS[2], ARGV[1])
end
return { removed, redis.call('SISMEMBER', KEYS[2], ARGV[1]), redis.call('HLEN', KEYS[1]) }
