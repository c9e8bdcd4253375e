--[[
  Drops an inactive user's marks unless they were seen again after the cutoff.
  KEYS[1] marks  HASH  seen · at · r:<red dot>
  ARGV[1] cutoff: marks last seen at or before it are dropped
  Returns 1 when dropped, 0 when kept
]]
local at = tonumber(redis.call('HGET', KEYS[1], 'at') or '0')
if at > tonumber(ARGV[1]) then
  return 0
end
redis.call('DEL', KEYS[1])
return 1
