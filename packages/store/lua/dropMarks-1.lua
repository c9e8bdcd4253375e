--[[
  Drops an inactive user's marks unless they were seen again after the cutoff.
  KEYS[1] marks  HASH  seen · at · r:<red dot>
  ARGV[1] cutoff: marks last seen at or before it are dropped
  Returns 0 when dropped (or there were none), else the last sight that kept them
]]
local at = tonumber(redis.call('HGET', KEYS[1], 'at') or '0')
if at > tonumber(ARGV[1]) then
  return at
end
redis.call('DEL', KEYS[1])
return 0
