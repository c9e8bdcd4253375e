--[[
  Give the leader lease up, but only when the node holds it.
  KEYS[1] leader     STRING  id of the leading node, expiring with the lease
  ARGV[1] node id resigning
  Returns 1 when the lease was deleted, 0 when the node did not hold it
]]
local leaderKey = KEYS[1]
local node = ARGV[1]

if redis.call('GET', leaderKey) ~= node then
  return 0
end
redis.call('DEL', leaderKey)
return 1
