--[[
  Withdraws a live notice and logs it in one step.
  KEYS[1] live     ZSET   notice id → id
  KEYS[2] log      STREAM the shared log
  ARGV[1] notice id
  ARGV[2] maxlen   approximate cap of the log
  ARGV[3] the event as JSON
  Returns 1 when withdrawn, 0 when it was not live
]]
--- @include "appendSharedEvent"
if redis.call('ZREM', KEYS[1], ARGV[1]) == 0 then
  return 0
end
appendSharedEvent(KEYS[2], ARGV[2], 'notice', ARGV[3])
return 1
