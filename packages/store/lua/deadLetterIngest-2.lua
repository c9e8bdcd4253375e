--[[
  Moves one ingest entry to the partition's dead letters and acknowledges it, atomically: the
  dead-letter stream holds the entry's fields plus `entry` (its id), `error` and `deliveries`.
  An entry no longer pending (another consumer applied and acknowledged it meanwhile) is left
  alone, so no dead letter doubles an applied entry.
  KEYS[1] stream   STREAM  <prefix>:ingest:{i}
  KEYS[2] dead     STREAM  <prefix>:ingest:dead{i}
  ARGV[1] group, ARGV[2] entry id, ARGV[3] error, ARGV[4] deliveries, ARGV[5..] field, value, …
  Returns the dead letter's id, or false when the entry was no longer pending
]]
if redis.call('XACK', KEYS[1], ARGV[1], ARGV[2]) == 0 then return false end
local fields = {}
for i = 5, #ARGV, 2 do
  fields[#fields + 1] = ARGV[i]
  fields[#fields + 1] = ARGV[i + 1]
end
fields[#fields + 1] = 'entry'
fields[#fields + 1] = ARGV[2]
fields[#fields + 1] = 'error'
fields[#fields + 1] = ARGV[3]
fields[#fields + 1] = 'deliveries'
fields[#fields + 1] = ARGV[4]
return redis.call('XADD', KEYS[2], '*', unpack(fields))
