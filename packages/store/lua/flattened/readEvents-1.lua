--[[
  Read a change log after a position, and tell whether the reader missed entries: trimmed
  before it read them, or lost with the stream (a key that vanished: a Redis restarted empty,
  evicted or flushed; or a tail lost with the last second of an AOF). Both come from one
  snapshot, so a trim can never slip in between the read and the check.
  A position past LOG_START is always the id of an entry the reader read (or the log's end
  when it started), so it is still in the stream unless that entry was trimmed or lost. A
  stream recreated after a loss starts after every position handed out before it, so a reader
  of the old stream finds its entry missing and is told of a gap, not "continuous".
  KEYS[1] log        STREAM
  ARGV[1] after      stream id, exclusive
  ARGV[2] limit      most entries to return
  Returns { gap (1/0), entries } with entries as XRANGE returns them
]]
--[[
  Whether entries after a position were trimmed from a change log (a stream that exists: XINFO
  fails on a missing key).
  Trimming only removes the oldest entries, and it happened iff fewer are kept than were added
  (nothing is XDELed). A reader missed entries iff it is before the last trimmed one. That one is
  gone, so compare with the id just before the first kept: exact when both share a millisecond,
  else a reader right at the trim point is told of a gap it does not have (a needless reload,
  never a missed change). Redis leaves max-deleted-entry-id at 0-0 when trimming.
]]
local function logTrimmedAfter(logKey, after)
  local info = redis.call('XINFO', 'STREAM', logKey)
  local fields = {}
  for i = 1, #info, 2 do
    fields[info[i]] = info[i + 1]
  end
  if fields['entries-added'] <= fields['length'] then return false end
  local firstMs, firstSeq = string.match(fields['recorded-first-entry-id'], '^(%d+)-(%d+)$')
  local afterMs, afterSeq = string.match(after, '^(%d+)-(%d+)$')
  firstMs, firstSeq = tonumber(firstMs), tonumber(firstSeq)
  afterMs, afterSeq = tonumber(afterMs), tonumber(afterSeq)
  return afterMs < firstMs or (afterMs == firstMs and afterSeq < firstSeq - 1)
end
local logKey = KEYS[1]
local after = ARGV[1]
local limit = ARGV[2]
local fromStart = after == '0-0'

if redis.call('EXISTS', logKey) == 0 then
  return { fromStart and 0 or 1, {} }
end

local entries = redis.call('XRANGE', logKey, '(' .. after, '+', 'COUNT', limit)
local gap
if fromStart then
  gap = logTrimmedAfter(logKey, after)
elseif #redis.call('XRANGE', logKey, after, after) == 1 then
  gap = false
else
  -- Not kept: no gap only when it is the last entry trimmed (as logTrimmedAfter judges it: the
  -- position just before the first kept one), trimmed in order by MAXLEN and never lost.
  local info = redis.call('XINFO', 'STREAM', logKey)
  local fields = {}
  for i = 1, #info, 2 do
    fields[info[i]] = info[i + 1]
  end
  local trimmed = fields['entries-added'] > fields['length']
  local firstMs, firstSeq = string.match(fields['recorded-first-entry-id'], '^(%d+)-(%d+)$')
  local afterMs, afterSeq = string.match(after, '^(%d+)-(%d+)$')
  local lastTrimmed = trimmed
    and tonumber(afterMs) == tonumber(firstMs)
    and tonumber(afterSeq) == tonumber(firstSeq) - 1
  gap = not lastTrimmed
end
return { gap and 1 or 0, entries }
