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
