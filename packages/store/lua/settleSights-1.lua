--[[
  The inactive-user job's last step on the last-seen index, after dropMarks-1.lua ran for each
  candidate: a dropped user leaves the index unless a sight re-added them meanwhile (their
  score then is past the cutoff), and a kept one moves to the sight that kept them, so a stale
  entry cannot stay first in line run after run.
  KEYS[1] lastseen  ZSET  user → last sight (ms)
  ARGV[1] cutoff
  ARGV[2..] pairs of (user, 0 when dropped or the sight that kept them)
  Returns the number of entries removed
]]
local cutoff = tonumber(ARGV[1])
local removed = 0
for i = 2, #ARGV, 2 do
  local user, kept = ARGV[i], tonumber(ARGV[i + 1])
  local score = tonumber(redis.call('ZSCORE', KEYS[1], user) or '-1')
  if kept == 0 then
    if score >= 0 and score <= cutoff then
      redis.call('ZREM', KEYS[1], user)
      removed = removed + 1
    end
  elseif score < kept then
    redis.call('ZADD', KEYS[1], kept, user)
  end
end
return removed
