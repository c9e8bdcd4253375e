--[[
  Store one user's interaction events of one kind, each stamped with its arrival on the
  server's clock.
  KEYS[1]  state      HASH  c → time of the last count · l → last stamp of any kind ·
                            l:<kind> → the kind's last stamp · r:<kind> → its readAt
  KEYS[2]  retracted  ZSET  "<length of kind>:<kind>:<id>" → time of the retraction (see
                            retractCounter-3; "<kind>:<id>", written before 2026-12-07, is
                            still honoured until it leaves the window)
  KEYS[3]  events     ZSET  event id → arrivedAt, of this kind
  ARGV[1]  windowMs   events, retractions and the keys themselves are forgotten after it
  ARGV[2]  kind
  ARGV[3..] event ids
  An event already stored, or retracted within the window, is ignored (also twice in a call).
  A stamp is max(now, the user's last stamp + 1, the kind's readAt + 1, the last count + 1):
  strictly increasing per user (so per (user, kind)), and after every readAt and every count
  served so far; a user with no state is taken as counted now (a count of them writes nothing).
  Returns { accepted, ignored }
]]
--- @include "storeNow"
local stateKey = KEYS[1]
local retractedKey = KEYS[2]
local eventsKey = KEYS[3]
local windowMs = tonumber(ARGV[1])
local kind = ARGV[2]

local now = storeNow()
local cutoff = now - windowMs
redis.call('ZREMRANGEBYSCORE', retractedKey, '-inf', cutoff)
redis.call('ZREMRANGEBYSCORE', eventsKey, '-inf', cutoff)

-- A count of a user without state leaves no trace (countCounters-4 writes nothing for them),
-- so it may have happened at any time up to now: their first stamp is after now.
local countedAt = now
if redis.call('EXISTS', stateKey) == 1 then
  countedAt = tonumber(redis.call('HGET', stateKey, 'c') or '0')
end
local last = tonumber(redis.call('HGET', stateKey, 'l') or '0')
local readAt = tonumber(redis.call('HGET', stateKey, 'r:' .. kind) or '0')
local accepted = 0
local ignored = 0
for i = 3, #ARGV do
  local id = ARGV[i]
  local retracted = redis.call('ZSCORE', retractedKey, #kind .. ':' .. kind .. ':' .. id)
    or redis.call('ZSCORE', retractedKey, kind .. ':' .. id)
  if retracted or redis.call('ZSCORE', eventsKey, id) then
    ignored = ignored + 1
  else
    last = math.max(now, last + 1, readAt + 1, countedAt + 1)
    redis.call('ZADD', eventsKey, last, id)
    accepted = accepted + 1
  end
end
if accepted > 0 then
  redis.call('HSET', stateKey, 'l', last, 'l:' .. kind, last)
  redis.call('PEXPIRE', stateKey, windowMs)
  redis.call('PEXPIRE', eventsKey, windowMs)
end
return { accepted, ignored }
