--[[
  Deletes a conversation and every member's cursor and mute in it.
  KEYS[1] meta     HASH
  KEYS[2] members  HASH
  Returns the members it had
]]
local members = redis.call('HKEYS', KEYS[2])
redis.call('DEL', KEYS[1], KEYS[2])
return members
