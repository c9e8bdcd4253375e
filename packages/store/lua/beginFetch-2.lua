--[[
  A fetch of the user's sources from the platform starts: unless they are held already, the
  fetch marker (includes/recordedFollows.lua) exists for at least `ttl` from now, so follow
  changes received until the answer's install are recorded, not dropped. A marker already there
  keeps what it recorded.
  KEYS[1] authors  STRING  the user's authors list: held if present
  KEYS[2] fetch    HASH    the fetch marker
  ARGV[1] ttl ms
  Returns 1 marked · 0 held already (no marker)
]]
local fetchKey = KEYS[2]
local ttl = tonumber(ARGV[1])

if redis.call('EXISTS', KEYS[1]) == 1 then
  return 0
end
if redis.call('EXISTS', fetchKey) == 0 then
  redis.call('HSET', fetchKey, 'n', 0)
elseif redis.call('PTTL', fetchKey) >= ttl then
  return 1
end
redis.call('PEXPIRE', fetchKey, ttl)
return 1
