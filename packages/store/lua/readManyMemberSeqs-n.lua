--[[
  readMemberSeqs-2 of many conversations in one call, on a standalone Redis (their keys are in
  many slots).
  KEYS    meta HASH, members HASH of each conversation, in turn
  ARGV    per conversation, in KEYS' order: the number of members asked, then those members
  Returns per conversation, concatenated: { maxSeq or false, each member's entry or false }
]]
local CHUNK = 3000
local reply = {}
local at = 1
for base = 0, #KEYS - 2, 2 do
  local asked = tonumber(ARGV[at])
  reply[#reply + 1] = redis.call('HGET', KEYS[base + 1], 'maxSeq')
  for first = at + 1, at + asked, CHUNK do
    local entries = redis.call('HMGET', KEYS[base + 2], unpack(ARGV, first, math.min(first + CHUNK - 1, at + asked)))
    for k = 1, #entries do
      reply[#reply + 1] = entries[k]
    end
  end
  at = at + asked + 1
end
return reply
