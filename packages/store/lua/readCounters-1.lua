--[[
  A read of one user's interaction counters: readAt(k) := max(readAt, min(upTo, now)) for each
  kind; without upTo, past every event stamped so far (max(now, the kind's last stamp)).
  Nothing is written for a user with no counter state (no event to clear, none before it).
  KEYS[1]  state  HASH  as ingestCounters-3
  ARGV[1]  upTo   ms, or "-" for none
  ARGV[2..] kinds
  Returns the number of cursors written
]]
--- @include "storeNow"
local stateKey = KEYS[1]
local upTo = ARGV[1]

if redis.call('EXISTS', stateKey) == 0 then
  return 0
end
local now = storeNow()
local written = 0
for i = 2, #ARGV do
  local kind = ARGV[i]
  local last = redis.call('HGET', stateKey, 'l:' .. kind)
  if last then
    local target
    if upTo == '-' then
      target = math.max(now, tonumber(last))
    else
      target = math.min(tonumber(upTo), now)
    end
    local readAt = tonumber(redis.call('HGET', stateKey, 'r:' .. kind) or '0')
    if target > readAt then
      redis.call('HSET', stateKey, 'r:' .. kind, target)
      written = written + 1
    end
  end
end
return written
