--[[
  Offline delivery: at most one expansion of a conversation per minimum interval. A
  conversation job read less than an interval after the conversation's last expansion began
  (or while one of its jobs is deferred) is merged into the conversation's one deferred job
  (maxSeq the highest, senders the union, the last 10 items), due at that expansion + the interval, and
  acknowledged in the same step; otherwise the expansion is recorded as beginning now.
  KEYS[1] jobs      STREAM the jobs (consumer group ARGV[3])
  KEYS[2] cursors   HASH   job id → page cursor
  KEYS[3] deferred  HASH   conversation → merged job (JSON)
  KEYS[4] deferDue  ZSET   conversation → when its merged job is due (ms)
  KEYS[5] expanded  ZSET   conversation → when its last expansion began (ms), trimmed by age
  ARGV[1] now · ARGV[2] minimum interval · ARGV[3] group · ARGV[4] consumer · ARGV[5] job id
  ARGV[6] conversation · ARGV[7] maxSeq · ARGV[8] the job's items, a JSON array ("" none)
  ARGV[9..] senders
  Returns 1: expand the job now; 0: merged and acknowledged; -1: the job is no longer this
  consumer's (another claimed it)
]]
local jobs, cursors, deferred, deferDue, expanded = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local now, interval = tonumber(ARGV[1]), tonumber(ARGV[2])
local job, conversation = ARGV[5], ARGV[6]
local owner = redis.call('XPENDING', jobs, ARGV[3], job, job, 1)[1]
if not owner or owner[2] ~= ARGV[4] then
  return -1
end
redis.call('ZREMRANGEBYSCORE', expanded, '-inf', now - interval)
local began = redis.call('ZSCORE', expanded, conversation)
local merged = redis.call('HGET', deferred, conversation)
if not began and not merged then
  redis.call('ZADD', expanded, now, conversation)
  return 1
end
local maxSeq = tonumber(ARGV[7])
local senders, seen = {}, {}
local function addSender(sender)
  if not seen[sender] then
    seen[sender] = true
    senders[#senders + 1] = cjson.encode(sender)
  end
end
local items = {}
if merged then
  local previous = cjson.decode(merged)
  if type(previous.items) == 'table' then
    for _, item in ipairs(previous.items) do
      items[#items + 1] = item
    end
  end
  if tonumber(previous.maxSeq) > maxSeq then
    maxSeq = tonumber(previous.maxSeq)
  end
  for _, sender in ipairs(previous.senders) do
    addSender(sender)
  end
end
for i = 9, #ARGV do
  addSender(ARGV[i])
end
if ARGV[8] ~= '' then
  for _, item in ipairs(cjson.decode(ARGV[8])) do
    items[#items + 1] = item
  end
end
local kept = {}
for i = math.max(1, #items - 9), #items do
  kept[#kept + 1] = cjson.encode(items[i])
end
-- Built by hand: cjson encodes an empty array as an object.
redis.call('HSET', deferred, conversation, '{"kind":"conversation","conversation":' ..
  cjson.encode(conversation) .. ',"maxSeq":' .. string.format('%d', maxSeq) ..
  ',"senders":[' .. table.concat(senders, ',') .. '],"items":[' .. table.concat(kept, ',') .. ']}')
if began then
  redis.call('ZADD', deferDue, 'NX', tonumber(began) + interval, conversation)
else
  redis.call('ZADD', deferDue, 'NX', now, conversation)
end
redis.call('XACK', jobs, ARGV[3], job)
redis.call('XDEL', jobs, job)
redis.call('HDEL', cursors, job)
return 0
