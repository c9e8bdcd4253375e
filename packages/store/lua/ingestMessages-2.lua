--[[
  Ingests messages of one conversation: O(1) writes per message whatever the member count.
  maxSeq := max(maxSeq, seq); the ts and preview of the highest seq win; a member who sent a
  message has read up to it. Idempotent on seq; atomic against readConversation-2.lua.
  KEYS[1] meta     HASH  maxSeq · lastTs · preview (JSON text, "" for none)
  KEYS[2] members  HASH  member → "<readSeq>" or "<readSeq>m"
  ARGV[1] BUBBLE_LARGE_GROUP: up to that many members, the members are returned (their activity
          indexes, in other slots, are written per member by the caller)
  ARGV from 2, per message: seq, from, ts, preview
  Returns -1 when the conversation does not exist; else { maxSeq, lastTs, members or 0 when the
  conversation is larger, sender, seq, sender, seq, … } for every member who sent in the batch,
  with their highest seq in it (their cursor is at least that now): the same answer when the
  batch is retried, so a retry's event (and activity index writes) is complete
]]
local meta, members = KEYS[1], KEYS[2]
local largeGroup = tonumber(ARGV[1])
if redis.call('EXISTS', meta) == 0 then
  return -1
end
local maxSeqText = redis.call('HGET', meta, 'maxSeq') or '0'
local maxSeq = tonumber(maxSeqText)
local sent = {}
for i = 2, #ARGV, 4 do
  local seqText, from = ARGV[i], ARGV[i + 1]
  local seq = tonumber(seqText)
  if seq > maxSeq then
    maxSeq, maxSeqText = seq, seqText
    redis.call('HSET', meta, 'maxSeq', seqText, 'lastTs', ARGV[i + 2], 'preview', ARGV[i + 3])
  end
  local member = redis.call('HGET', members, from)
  if member then
    local readText = string.match(member, '^%d+')
    if seq > tonumber(readText) then
      local mute = string.sub(member, -1) == 'm' and 'm' or ''
      redis.call('HSET', members, from, seqText .. mute)
    end
    if not sent[from] or seq > tonumber(sent[from]) then
      sent[from] = seqText
    end
  end
end
local listed = 0
if redis.call('HLEN', members) <= largeGroup then
  listed = redis.call('HKEYS', members)
end
local result = { maxSeqText, redis.call('HGET', meta, 'lastTs') or '0', listed }
for sender, seq in pairs(sent) do
  result[#result + 1] = sender
  result[#result + 1] = seq
end
return result
