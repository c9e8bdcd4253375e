--[[
  advanceMemberSeqs-2 of many conversations in one call, on a standalone Redis (their keys are
  in many slots).
  KEYS    meta HASH, members HASH of each conversation, in turn
  ARGV    per conversation, in KEYS' order: the number of its moves, then member and seq of each
  Returns per move, in ARGV's order: the cursor after it (decimal text), or false when the user
  is not a member
]]
--[[
  Moves the cursors of some members of one conversation as readConversation-2.lua moves one,
  atomically against ingestMessages-2.lua: readSeq := max(readSeq, min(seq, maxSeq)), for
  members only.
  metaKey     HASH  maxSeq · …
  membersKey  HASH  member → "<readSeq>" or "<readSeq>m"
  ARGV[first .. first + 2 * count - 1]  member and seq of each move
  Appends to `reply` per move: the cursor after it (decimal text), or false when the user is not
  a member
]]
local function advanceMemberSeqsAt(metaKey, membersKey, first, count, reply)
  local maxSeq = redis.call('HGET', metaKey, 'maxSeq') or '0'
  for i = first, first + 2 * count - 1, 2 do
    local user, seq = ARGV[i], ARGV[i + 1]
    local entry = redis.call('HGET', membersKey, user)
    if entry then
      local readText = string.match(entry, '^%d+')
      local target = maxSeq
      if tonumber(seq) < tonumber(target) then
        target = seq
      end
      if tonumber(target) > tonumber(readText) then
        local mute = string.sub(entry, -1) == 'm' and 'm' or ''
        redis.call('HSET', membersKey, user, target .. mute)
        readText = target
      end
      reply[#reply + 1] = readText
    else
      reply[#reply + 1] = false
    end
  end
end
local reply = {}
local at = 1
for base = 0, #KEYS - 2, 2 do
  local count = tonumber(ARGV[at])
  advanceMemberSeqsAt(KEYS[base + 1], KEYS[base + 2], at + 1, count, reply)
  at = at + 1 + 2 * count
end
return reply
