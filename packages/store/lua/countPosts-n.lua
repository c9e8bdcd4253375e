--[[
  The feed count of one cold start: posts in a window, summed over many authors, in one call.
  Used on a standalone Redis, where every author's index is on the one server.
  KEYS[1..n] posts   ZSET  post id → ts, one per followed author
  ARGV[1] low        exclusive lower bound, as "(<ms>"
  ARGV[2] high       inclusive upper bound (ms)
  Returns the number of posts with low < ts ≤ high over all KEYS
]]
local low = ARGV[1]
local high = ARGV[2]

local total = 0
for i = 1, #KEYS do
  total = total + redis.call('ZCOUNT', KEYS[i], low, high)
end
return total
