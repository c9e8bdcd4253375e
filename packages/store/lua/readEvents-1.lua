--[[
  Read a change log after a position, and tell whether entries after it were trimmed first.
  Both come from one snapshot, so a trim can never slip in between the read and the check.
  KEYS[1] log        STREAM
  ARGV[1] after      stream id, exclusive
  ARGV[2] limit      most entries to return
  Returns { gap (1/0), entries } with entries as XRANGE returns them
]]
--- @include "logTrimmedAfter"
local logKey = KEYS[1]
local after = ARGV[1]
local limit = ARGV[2]

if redis.call('EXISTS', logKey) == 0 then
  return { 0, {} }
end

local entries = redis.call('XRANGE', logKey, '(' .. after, '+', 'COUNT', limit)
local gap = logTrimmedAfter(logKey, after) and 1 or 0
return { gap, entries }
