--[[
  Offline delivery: schedules one page of a job's users and keeps the job's page cursor, in one
  step, so a job resumed by another worker starts at the page after the last one scheduled. A
  user already queued keeps their one entry and due time, the reasons merged (coalesced) and the
  items appended (the last 10 kept); a new one is due at max(now, their last delivery + the
  minimum interval). A conditional user (online: only a decrease of what their phone shows can be
  due) is scheduled only when bubble delivered to them before, or is delivering now. Past the
  bound the oldest queued users are shed.
  KEYS[1] due      ZSET   user → due time (ms)
  KEYS[2] reasons  HASH   user → reasons, comma-separated
  KEYS[3] since    ZSET   user → when queued (ms)
  KEYS[4] last     ZSET   user → last delivery (ms), only the ones within the interval
  KEYS[5] cursors  HASH   job id → page cursor
  KEYS[6] jobs     STREAM the jobs (consumer group ARGV[4])
  KEYS[7] items    HASH   user → what caused their increase: JSON texts joined by \30 (the
                          record separator, never unescaped in JSON), the newest 10
  KEYS[8] shown    HASH   user → "total,seq" last delivered
  KEYS[9] inflight ZSET   user → lease expiry (being prepared)
  KEYS[10] pending HASH   user → batch id not yet delivered
  ARGV[1] now · ARGV[2] minimum interval · ARGV[3] queue bound · ARGV[4] group · ARGV[5] consumer
  ARGV[6] job id ("" for none) · ARGV[7] the page cursor after this page ("done" after the
  last page: the job is acknowledged, deleted and its cursor forgotten in the same step)
  ARGV[8] the reason of the unconditional users · ARGV[9] their items, JSON texts joined by \30
  ("" none)
  ARGV[10] n, the number of unconditional users · ARGV[11] the reason of the conditional users
  ARGV[12 .. 11+n] the unconditional users · then the conditional users (no items)
  Returns { added, coalesced, shed }, or { -1 } when the job is no longer this consumer's
  (another claimed it): nothing is scheduled then
]]
local due, reasons, since, last, cursors, jobs = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local items, shown, inflight, pending = KEYS[7], KEYS[8], KEYS[9], KEYS[10]
local now, interval, bound = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local job = ARGV[6]
if job ~= '' then
  local owner = redis.call('XPENDING', jobs, ARGV[4], job, job, 1)[1]
  if not owner or owner[2] ~= ARGV[5] then
    return { -1 }
  end
  if ARGV[7] == 'done' then
    redis.call('XACK', jobs, ARGV[4], job)
    redis.call('XDEL', jobs, job)
    redis.call('HDEL', cursors, job)
  else
    -- Resets the job's idle time: a worker still expanding it is not taken for dead.
    redis.call('XCLAIM', jobs, ARGV[4], ARGV[5], 0, job, 'JUSTID')
    redis.call('HSET', cursors, job, ARGV[7])
  end
end
local RS = '\30'
local pageItems = ARGV[9]
local pageCount = select(2, string.gsub(pageItems, RS, RS)) + 1
-- Joined as text, never decoded: a page of a large group costs a concatenation per user.
local function addItems(user)
  local queued = redis.call('HGET', items, user)
  if not queued and pageCount <= 10 then
    redis.call('HSET', items, user, pageItems)
    return
  end
  local merged = queued and (queued .. RS .. pageItems) or pageItems
  local separators = {}
  local from = 1
  while true do
    local at = string.find(merged, RS, from, true)
    if not at then break end
    separators[#separators + 1] = at
    from = at + 1
  end
  local excess = #separators + 1 - 10
  if excess > 0 then
    merged = string.sub(merged, separators[excess] + 1)
  end
  redis.call('HSET', items, user, merged)
end
local added, coalesced = 0, 0
local unconditional = 11 + tonumber(ARGV[10])
for i = 12, #ARGV do
  local user = ARGV[i]
  local sure = i <= unconditional
  local reason = sure and ARGV[8] or ARGV[11]
  local comma = ',' .. reason .. ','
  if sure or redis.call('HEXISTS', shown, user) == 1
      or redis.call('ZSCORE', inflight, user) or redis.call('HEXISTS', pending, user) == 1 then
    local queued = redis.call('HGET', reasons, user)
    if redis.call('ZSCORE', due, user) then
      coalesced = coalesced + 1
      if not queued then
        redis.call('HSET', reasons, user, reason)
      elseif not string.find(',' .. queued .. ',', comma, 1, true) then
        redis.call('HSET', reasons, user, queued .. ',' .. reason)
      end
    else
      added = added + 1
      local at = now
      local delivered = redis.call('ZSCORE', last, user)
      if delivered and tonumber(delivered) + interval > at then
        at = tonumber(delivered) + interval
      end
      redis.call('ZADD', due, at, user)
      redis.call('ZADD', since, now, user)
      redis.call('HSET', reasons, user, reason)
    end
    if sure and pageItems ~= '' then
      addItems(user)
    end
  end
end
local shed = 0
local excess = redis.call('ZCARD', due) - bound
if excess > 0 then
  local oldest = redis.call('ZRANGE', since, 0, excess - 1)
  for _, user in ipairs(oldest) do
    redis.call('ZREM', due, user)
    redis.call('ZREM', since, user)
    redis.call('HDEL', reasons, user)
    redis.call('HDEL', items, user)
  end
  shed = #oldest
end
return { added, coalesced, shed }
