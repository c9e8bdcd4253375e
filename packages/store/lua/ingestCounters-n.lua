--[[
  Store one user's interaction events, each stamped with its arrival on the server's clock.
  KEYS[1]     state      HASH  c → time of the last count · l:<kind> → last stamp · r:<kind> → readAt
  KEYS[2]     retracted  ZSET  "<kind>:<id>" → time of the retraction
  KEYS[3..n]  events     ZSET  event id → arrivedAt, one per kind named in the batch
  ARGV[1]     windowMs   events, retractions and the keys themselves are forgotten after it
  ARGV[2..]   triples    index of the kind's KEYS entry (3..n), kind, event id
  An event already stored, or retracted within the window, is ignored (also twice in a batch).
  A stamp is max(now, the kind's last stamp + 1, its readAt + 1, the last count + 1): strictly
  increasing per (user, kind), and after every readAt and every count served so far.
  Returns { accepted, ignored }
]]
--- @include "storeNow"
local stateKey = KEYS[1]
local retractedKey = KEYS[2]
local windowMs = tonumber(ARGV[1])

local now = storeNow()
local cutoff = now - windowMs
redis.call('ZREMRANGEBYSCORE', retractedKey, '-inf', cutoff)
for i = 3, #KEYS do
  redis.call('ZREMRANGEBYSCORE', KEYS[i], '-inf', cutoff)
end

local countedAt = tonumber(redis.call('HGET', stateKey, 'c') or '0')
local accepted = 0
local ignored = 0
for i = 2, #ARGV, 3 do
  local eventsKey = KEYS[tonumber(ARGV[i])]
  local kind = ARGV[i + 1]
  local id = ARGV[i + 2]
  if redis.call('ZSCORE', retractedKey, kind .. ':' .. id) or redis.call('ZSCORE', eventsKey, id) then
    ignored = ignored + 1
  else
    local last = tonumber(redis.call('HGET', stateKey, 'l:' .. kind) or '0')
    local readAt = tonumber(redis.call('HGET', stateKey, 'r:' .. kind) or '0')
    local stamp = math.max(now, last + 1, readAt + 1, countedAt + 1)
    redis.call('ZADD', eventsKey, stamp, id)
    redis.call('HSET', stateKey, 'l:' .. kind, stamp)
    accepted = accepted + 1
  end
end
if accepted > 0 then
  redis.call('PEXPIRE', stateKey, windowMs)
  for i = 3, #KEYS do
    if redis.call('EXISTS', KEYS[i]) == 1 then
      redis.call('PEXPIRE', KEYS[i], windowMs)
    end
  end
end
return { accepted, ignored }
