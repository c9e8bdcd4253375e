--[[
  advanceMemberSeqs-2 of many conversations in one call, on a standalone Redis (their keys are
  in many slots).
  KEYS    meta HASH, members HASH of each conversation, in turn
  ARGV    per conversation, in KEYS' order: the number of its moves, then member and seq of each
  Returns per move, in ARGV's order: the cursor after it (decimal text), or false when the user
  is not a member
]]
--- @include "advanceMemberSeqsAt"
local reply = {}
local at = 1
for base = 0, #KEYS - 2, 2 do
  local count = tonumber(ARGV[at])
  advanceMemberSeqsAt(KEYS[base + 1], KEYS[base + 2], at + 1, count, reply)
  at = at + 1 + 2 * count
end
return reply
