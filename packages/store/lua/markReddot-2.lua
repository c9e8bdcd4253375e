--[[
  Marks a red dot (or moves its time) and logs it in one step.
  KEYS[1] marked   HASH   red dot name → G(name)
  KEYS[2] log      STREAM the shared log
  ARGV[1] name
  ARGV[2] ts
  ARGV[3] maxlen   approximate cap of the log
  ARGV[4] the event as JSON
]]
--- @include "appendSharedEvent"
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
appendSharedEvent(KEYS[2], ARGV[3], 'reddot', ARGV[4])
return 1
