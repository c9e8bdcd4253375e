--[[
  A conversation's maxSeq and the cursors of some of its members, in one call: what a batch of
  cold starts reads of each conversation its users are in. Both keys carry the conversation's
  hash tag.
  KEYS[1] meta HASH (maxSeq) · KEYS[2] members HASH member → "<readSeq>" or "<readSeq>m"
  ARGV the members
  Returns { maxSeq or false, each member's entry or false, in ARGV's order }
]]
local CHUNK = 3000
local reply = { redis.call('HGET', KEYS[1], 'maxSeq') }
for first = 1, #ARGV, CHUNK do
  local entries = redis.call('HMGET', KEYS[2], unpack(ARGV, first, math.min(first + CHUNK - 1, #ARGV)))
  for k = 1, #entries do
    reply[#reply + 1] = entries[k]
  end
end
return reply
