--[[
  Replace the whole list in one step, so no reader sees it half written; with a sources
  endpoint, only for a user whose sources are held, or recorded while a fetch of them is in
  flight (includes/recordedFollows.lua: it then stands in for the answer's list of its kind).
  KEYS[1] list     STRING  the authors (or topics) the user follows, joined by ','
  KEYS[2] authors  STRING  the user's authors list (KEYS[1] itself for an author): held if present
  KEYS[3] fetch    HASH    the fetch marker
  ARGV[1] kind     'a' authors · 't' topics
  ARGV[2] '1' with a sources endpoint (on demand), else '0'
  ARGV[3..] the ids (de-duplicated and within the cap by the caller)
  Returns 1 stored · 2 recorded in the fetch marker · -2 not held and no fetch in flight
  (nothing stored)
]]
--- @include "followList"
--- @include "recordedFollows"
local listKey = KEYS[1]
local onDemand = ARGV[2] == '1'

local target = followChangeTarget(KEYS[2], KEYS[3], onDemand)
if target == 'dropped' then
  return -2
end
if target == 'fetching' then
  local ids = {}
  for i = 3, #ARGV do
    ids[#ids + 1] = ARGV[i]
  end
  recordFollowReplace(KEYS[3], ARGV[1], ids)
  return 2
end
writeFollowList(listKey, table.concat(ARGV, ',', 3, #ARGV), onDemand and listKey == KEYS[2])
return 1
