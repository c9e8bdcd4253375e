--[[
  A read of one user's interaction counters: readAt(k) := max(readAt, min(upTo, now')) for
  each kind with events, without upTo now', where now' = max(now, the user's last stamp): a
  burst stamps ahead of the clock (stamps increase strictly), and a read still clears what it
  was shown.
  Nothing is written for a user with no counter state (no event to clear, none before it).
  KEYS[1]  state  HASH  as ingestCounters-3
  ARGV[1]  upTo   ms, or "-" for none
  ARGV[2..] kinds
  Returns the number of cursors written
]]
--[[
  The server's clock, in ms. Presence, routes and node liveness are written and checked on it
  alone, so the clocks of the nodes calling the scripts never meet (docs/redis-keys.md, "One
  clock"). Scripts that call it write their effects, not the script, to replicas and the AOF.
]]
local function storeNow()
  local time = redis.call('TIME')
  return tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
end
local stateKey = KEYS[1]
local upTo = ARGV[1]

if redis.call('EXISTS', stateKey) == 0 then
  return 0
end
local reach = math.max(storeNow(), tonumber(redis.call('HGET', stateKey, 'l') or '0'))
local written = 0
for i = 2, #ARGV do
  local kind = ARGV[i]
  if redis.call('HEXISTS', stateKey, 'l:' .. kind) == 1 then
    local target = reach
    if upTo ~= '-' then
      target = math.min(tonumber(upTo), target)
    end
    local readAt = tonumber(redis.call('HGET', stateKey, 'r:' .. kind) or '0')
    if target > readAt then
      redis.call('HSET', stateKey, 'r:' .. kind, target)
      written = written + 1
    end
  end
end
return written
