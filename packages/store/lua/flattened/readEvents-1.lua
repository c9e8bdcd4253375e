--[[
  Read a change log after a position, and tell whether entries after it were trimmed first.
  Both come from one snapshot, so a trim can never slip in between the read and the check.
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

if redis.call('EXISTS', logKey) == 0 then
  return { 0, {} }
end

local entries = redis.call('XRANGE', logKey, '(' .. after, '+', 'COUNT', limit)
local gap = logTrimmedAfter(logKey, after) and 1 or 0
return { gap, entries }
