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
