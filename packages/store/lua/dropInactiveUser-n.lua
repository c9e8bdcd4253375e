--[[
  Drops an inactive user's own keys (RedisKeys.inactiveUserKeys: their marks, feed cursor and
  whatever else is kept per user beyond memberships, and with a sources endpoint their follows,
  topic follows and fetch marker too) unless they were seen again after the cutoff. Every key
  shares the user's hash tag {u:<user>}.
  KEYS[1] marks  HASH  seen · at · r:<red dot>: `at` is the last sight
  KEYS[2..] the user's other keys of that lifecycle, deleted with it
  ARGV[1] cutoff: a user last seen at or before it is dropped
  Returns 0 when dropped (or there was nothing), else the last sight that kept them
]]
local at = tonumber(redis.call('HGET', KEYS[1], 'at') or '0')
if at > tonumber(ARGV[1]) then
  return at
end
redis.call('DEL', unpack(KEYS))
return 0
