--[[
  Deletes a conversation and every member's cursor and mute in it. Its members are owed a
  `marks` event in their pool's log (another slot): they are put in the unlogged set, which
  outlives the conversation until the caller has appended their events and emptied it.
  KEYS[1] meta     HASH
  KEYS[2] members  HASH
  KEYS[3] unlogged SET   users owed a marks event for this conversation
  Returns { the members it had, every user owed a marks event (a retry finds the earlier call's) }
]]
local members = redis.call('HKEYS', KEYS[2])
redis.call('DEL', KEYS[1], KEYS[2])
for i = 1, #members, 1000 do
  redis.call('SADD', KEYS[3], unpack(members, i, math.min(i + 999, #members)))
end
return { members, redis.call('SMEMBERS', KEYS[3]) }
