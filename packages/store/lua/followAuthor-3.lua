--[[
  Follow one author (or topic), refusing to grow the list past the cap; with a sources endpoint,
  only for a user whose sources are held, or recorded while a fetch of them is in flight
  (includes/recordedFollows.lua).
  KEYS[1] list     STRING  the authors (or topics) the user follows, joined by ','
  KEYS[2] authors  STRING  the user's authors list (KEYS[1] itself for an author): held if present
  KEYS[3] fetch    HASH    the fetch marker
  ARGV[1] id
  ARGV[2] cap      integer, most ids the list may hold
  ARGV[3] kind     'a' authors · 't' topics
  ARGV[4] '1' with a sources endpoint (on demand), else '0'
  ARGV[5] limit    most ids of the kind the fetch marker records
  Returns 1 added · 0 already followed · -1 the cap is reached · 2 recorded in the fetch marker ·
  -2 not held and no fetch in flight (nothing stored) · -3 the marker's limit is reached
]]
--- @include "followList"
--- @include "recordedFollows"
local listKey = KEYS[1]
local id = ARGV[1]
local cap = tonumber(ARGV[2])

local target = followChangeTarget(KEYS[2], KEYS[3], ARGV[4] == '1')
if target == 'dropped' then
  return -2
end
if target == 'fetching' then
  return recordFollowChange(KEYS[3], ARGV[3], id, true, tonumber(ARGV[5])) and 2 or -3
end
local list = redis.call('GET', listKey) or ''
if followListHas(list, id) then
  return 0
end
if followListSize(list) >= cap then
  return -1
end
redis.call('SET', listKey, list == '' and id or (list .. ',' .. id))
return 1
