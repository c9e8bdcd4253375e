--[[
  advanceCursor-1 of many moves in one call, on a standalone Redis (their keys are in many
  slots): each cursor moves forward only. The same hash may come more than once: the moves
  apply in turn.
  KEYS[i]     HASH  cursor name → value: the hash of move i (a user's cursors or marks)
  ARGV[1]     cursor name, the same in every hash
  ARGV[i + 1] target value of move i
  Returns the cursor after each move, in KEYS' order (as strings, to keep full integer precision)
]]
local field = ARGV[1]
local reply = {}
for i = 1, #KEYS do
  local target = ARGV[i + 1]
  local current = redis.call('HGET', KEYS[i], field)
  if current == false or tonumber(target) > tonumber(current) then
    redis.call('HSET', KEYS[i], field, target)
    current = target
  end
  reply[i] = current
end
return reply
