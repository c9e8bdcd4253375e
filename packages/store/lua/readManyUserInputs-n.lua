--[[
  readUserInputs-9 of many users in one call, on a standalone Redis (their keys are in many
  slots): nine KEYS per user, in the order readUserInputs-9 takes them.
  ARGV as readUserInputs-9's
  Returns readUserInputs-9's reply of each user, in KEYS' order
]]
--- @include "userInputsAt"
local kinds = {}
for i = 3, #ARGV do
  kinds[i - 2] = ARGV[i]
end
local windowMs = tonumber(ARGV[2])
local replies = {}
for base = 0, #KEYS - 9, 9 do
  replies[#replies + 1] = userInputsAt(base, ARGV[1], kinds, windowMs)
end
return replies
