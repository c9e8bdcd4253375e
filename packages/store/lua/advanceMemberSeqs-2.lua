--[[
  A batch of reads with a seq in one conversation (includes/advanceMemberSeqsAt.lua): each
  member's readSeq := max(readSeq, min(seq, maxSeq)), atomically against ingestMessages-2.lua.
  Both keys carry the conversation's hash tag.
  KEYS[1] meta     HASH  maxSeq · …
  KEYS[2] members  HASH  member → "<readSeq>" or "<readSeq>m"
  ARGV    member and seq of each move, in turn
  Returns per move, in ARGV's order: the cursor after it (decimal text), or false when the user
  is not a member
]]
--- @include "advanceMemberSeqsAt"
local reply = {}
advanceMemberSeqsAt(KEYS[1], KEYS[2], 1, #ARGV / 2, reply)
return reply
