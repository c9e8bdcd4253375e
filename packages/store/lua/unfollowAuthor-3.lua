--[[
  Unfollow one author (or topic); with a sources endpoint, only for a user whose sources are
  held, or recorded while a fetch of them is in flight (includes/recordedFollows.lua). A held
  user's authors list stays, empty, on demand (its existence means held); else an emptied list
  is deleted.
  KEYS[1] list     STRING  the authors (or topics) the user follows, joined by ','
  KEYS[2] authors  STRING  the user's authors list (KEYS[1] itself for an author): held if present
  KEYS[3] fetch    HASH    the fetch marker
  ARGV[1] id
  ARGV[2] kind     'a' authors · 't' topics
  ARGV[3] '1' with a sources endpoint (on demand), else '0'
  ARGV[4] limit    most ids of the kind the fetch marker records
  Returns 1 removed · 0 not followed · 2 recorded in the fetch marker · -2 not held and no fetch
  in flight (nothing stored) · -3 the marker's limit is reached
]]
--- @include "followList"
--- @include "recordedFollows"
local listKey = KEYS[1]
local id = ARGV[1]
local onDemand = ARGV[3] == '1'

local target = followChangeTarget(KEYS[2], KEYS[3], onDemand)
if target == 'dropped' then
  return -2
end
if target == 'fetching' then
  return recordFollowChange(KEYS[3], ARGV[2], id, false, tonumber(ARGV[4])) and 2 or -3
end
local list = redis.call('GET', listKey)
local rest = list and followListWithout(list, id)
if not rest then
  return 0
end
writeFollowList(listKey, rest, onDemand and listKey == KEYS[2])
return 1
