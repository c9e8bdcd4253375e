--[[
  Offline delivery: appends the merged jobs of conversations due by now to the jobs stream again,
  where any worker reads (or claims) them under the usual rules, and forgets them, in one step.
  KEYS[1] jobs      STREAM the jobs
  KEYS[2] deferred  HASH   conversation → merged job (JSON)
  KEYS[3] deferDue  ZSET   conversation → when its merged job is due (ms)
  ARGV[1] now · ARGV[2] limit
  Returns the number of jobs appended
]]
local jobs, deferred, deferDue = KEYS[1], KEYS[2], KEYS[3]
local due = redis.call('ZRANGEBYSCORE', deferDue, '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
for _, conversation in ipairs(due) do
  local job = redis.call('HGET', deferred, conversation)
  if job then
    redis.call('XADD', jobs, '*', 'job', job)
    redis.call('HDEL', deferred, conversation)
  end
  redis.call('ZREM', deferDue, conversation)
end
return #due
