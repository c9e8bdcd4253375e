--[[
  counter(u, k) of one user's kinds, as of the server's clock, which it also returns: every
  event ingested after this count is stamped after it (ingestCounters-n reads `c`).
  KEYS[1]     state   HASH  as ingestCounters-n
  KEYS[2..n]  events  ZSET  event id → arrivedAt, one per kind, in ARGV's order
  ARGV[1]     windowMs
  ARGV[2..]   kinds
  Returns { now, count of each kind in ARGV's order }, now being -1 for a user with no counter
  state (nothing is written for them)
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
local windowMs = tonumber(ARGV[1])

local now = storeNow()
local reply = { now }
if redis.call('EXISTS', stateKey) == 0 then
  reply[1] = -1
  for i = 2, #KEYS do
    reply[i] = 0
  end
  return reply
end
redis.call('HSET', stateKey, 'c', now)
local cutoff = now - windowMs
for i = 2, #KEYS do
  local kind = ARGV[i]
  local readAt = tonumber(redis.call('HGET', stateKey, 'r:' .. kind) or '0')
  redis.call('ZREMRANGEBYSCORE', KEYS[i], '-inf', cutoff)
  reply[i] = redis.call('ZCOUNT', KEYS[i], '(' .. math.max(readAt, cutoff), '+inf')
end
return reply
