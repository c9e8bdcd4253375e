--[[
  Drops the acknowledged head of an ingest partition: every entry older than both the group's
  oldest pending entry and its last-delivered id (entries not yet delivered stay, whatever
  their age). Without the group nothing is dropped: it may be recreated at 0 and read all.
  KEYS[1] stream   STREAM  <prefix>:ingest:{i}
  ARGV[1] group
  Returns the number of entries dropped
]]
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local lastDelivered
for _, group in ipairs(redis.call('XINFO', 'GROUPS', KEYS[1])) do
  local info = {}
  for i = 1, #group, 2 do info[group[i]] = group[i + 1] end
  if info['name'] == ARGV[1] then lastDelivered = info['last-delivered-id'] end
end
if not lastDelivered then return 0 end
local minId = lastDelivered
local summary = redis.call('XPENDING', KEYS[1], ARGV[1])
if summary[1] > 0 then
  local oldest = summary[2]
  local oms, oseq = string.match(oldest, '^(%d+)-(%d+)$')
  local lms, lseq = string.match(lastDelivered, '^(%d+)-(%d+)$')
  if tonumber(oms) < tonumber(lms) or (oms == lms and tonumber(oseq) < tonumber(lseq)) then
    minId = oldest
  end
end
return redis.call('XTRIM', KEYS[1], 'MINID', minId)
