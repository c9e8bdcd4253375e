--[[
  Adds members to a conversation (creating it), or replaces its members. A member who joins
  starts at the conversation's maxSeq (0 unread), not muted; a member already there keeps
  their cursor and mute. Everyone added or removed is owed a `marks` event in their pool's log
  (another slot): they are put in the unlogged set, which the caller empties of the users it
  appended; what an earlier call left there (it failed before appending) is returned too.
  KEYS[1] meta     HASH  maxSeq · lastTs · preview
  KEYS[2] members  HASH  member → "<readSeq>" or "<readSeq>m" (muted)
  KEYS[3] unlogged SET   users owed a marks event for this conversation
  ARGV[1] "add" or "replace"
  ARGV[2..] members
  Returns { added members, removed members, every user owed a marks event, member count before,
  member count after, maxSeq, lastTs } (the counts tell the caller whether the conversation
  crossed BUBBLE_LARGE_GROUP, the seq and ts the activity it indexes)
]]
local meta, members, unlogged = KEYS[1], KEYS[2], KEYS[3]
local countBefore = redis.call('HLEN', members)
redis.call('HSETNX', meta, 'maxSeq', '0')
local maxSeq = redis.call('HGET', meta, 'maxSeq')
local added, removed = {}, {}
if ARGV[1] == 'replace' then
  local wanted = {}
  for i = 2, #ARGV do
    wanted[ARGV[i]] = true
  end
  for _, member in ipairs(redis.call('HKEYS', members)) do
    if not wanted[member] then
      redis.call('HDEL', members, member)
      removed[#removed + 1] = member
      redis.call('SADD', unlogged, member)
    end
  end
end
for i = 2, #ARGV do
  if redis.call('HSETNX', members, ARGV[i], maxSeq) == 1 then
    added[#added + 1] = ARGV[i]
    redis.call('SADD', unlogged, ARGV[i])
  end
end
return {
  added,
  removed,
  redis.call('SMEMBERS', unlogged),
  countBefore,
  redis.call('HLEN', members),
  maxSeq,
  redis.call('HGET', meta, 'lastTs') or '0',
}
