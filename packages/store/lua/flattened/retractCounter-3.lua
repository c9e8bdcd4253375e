--[[
  Retract one interaction event: it no longer counts, and an ingest of it within the window
  (a retry, a late duplicate) is ignored.
  KEYS[1]  state      HASH  as ingestCounters-3 (kept alive with the rest)
  KEYS[2]  retracted  ZSET  "<length of kind>:<kind>:<id>" → time of the retraction (kinds and
                            ids may hold ':': the length tells "like" + "post:1" from
                            "like:post" + "1")
  KEYS[3]  events     ZSET  event id → arrivedAt, of the event's kind
  ARGV[1]  windowMs
  ARGV[2]  kind
  ARGV[3]  event id
  Returns 1 when the event was stored, else 0
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
local retractedKey = KEYS[2]
local eventsKey = KEYS[3]
local windowMs = tonumber(ARGV[1])
local kind = ARGV[2]
local id = ARGV[3]

local now = storeNow()
redis.call('ZREMRANGEBYSCORE', retractedKey, '-inf', now - windowMs)
local removed = redis.call('ZREM', eventsKey, id)
redis.call('ZADD', retractedKey, now, #kind .. ':' .. kind .. ':' .. id)
redis.call('PEXPIRE', retractedKey, windowMs)
if redis.call('EXISTS', stateKey) == 1 then
  redis.call('PEXPIRE', stateKey, windowMs)
end
return removed
