--[[
  Extend the leader lease, but only for the node that holds it.
  KEYS[1] leader     STRING  id of the leading node, expiring with the lease
  ARGV[1] node id asking to extend
  ARGV[2] lease ttl (ms)
  Returns 1 when extended, 0 when another node or nobody holds the lease
]]
local leaderKey = KEYS[1]
local node = ARGV[1]
local ttl = ARGV[2]

if redis.call('GET', leaderKey) ~= node then
  return 0
end
redis.call('PEXPIRE', leaderKey, ttl)
return 1
