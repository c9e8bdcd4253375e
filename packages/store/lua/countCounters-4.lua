--[[
  counter(u, k) of up to three of one user's kinds, atomically, with the watermark
  (includes/countUserCounters.lua).
  KEYS[1]     state   HASH  as ingestCounters-3
  KEYS[2..4]  events  ZSET  event id → arrivedAt, of the kinds in ARGV's order (a call with
                            fewer kinds repeats the last key; it is not read)
  ARGV[1]     windowMs
  ARGV[2..]   the kinds, one to three
  Returns { watermark, count of each kind }, the watermark -1 for a user with no counter state
]]
--- @include "countUserCounters"
local kinds, eventsKeys = {}, {}
for i = 2, #ARGV do
  kinds[i - 1] = ARGV[i]
  eventsKeys[i - 1] = KEYS[i]
end
return countUserCounters(KEYS[1], eventsKeys, kinds, tonumber(ARGV[1]))
