--[[
  An end-user call saw a user: the first sight sets the notice cursor to the highest notice id
  published so far; the last sight is recorded at most once per throttle period. The first
  sight owes the user's pool a `marks` event (another slot): `unlogged` is set with the cursor
  and reported until the caller, having appended it, deletes it, so a sight after a failed
  append (a retried call) appends it then.
  KEYS[1] marks  HASH  seen · at · r:<red dot> · unlogged (docs/redis-keys.md)
  ARGV[1] now
  ARGV[2] the highest notice id, or "-" when the caller has not read it yet
  ARGV[3] throttle ms
  Returns { seen, touched (1 when `at` moved: the caller records it in the last-seen index),
  owed (1 while the first sight's marks event is not logged) }, or { -1, 0, 0 } when the cursor
  is unset and ARGV[2] is "-" (call again with the highest id)
]]
local marks = KEYS[1]
local seen = redis.call('HGET', marks, 'seen')
if not seen then
  if ARGV[2] == '-' then
    return { -1, 0, 0 }
  end
  seen = ARGV[2]
  redis.call('HSET', marks, 'seen', seen, 'unlogged', '1')
end
local at = tonumber(redis.call('HGET', marks, 'at') or '0')
local touched = 0
if at + tonumber(ARGV[3]) <= tonumber(ARGV[1]) then
  redis.call('HSET', marks, 'at', ARGV[1])
  touched = 1
end
return { tonumber(seen), touched, redis.call('HEXISTS', marks, 'unlogged') }
