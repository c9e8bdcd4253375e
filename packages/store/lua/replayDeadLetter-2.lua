--[[
  Moves one dead letter back to its partition's ingest stream in one step, only while it is
  still dead: two operators replaying it at once append it once. The fields the consumer added
  when it died (`entry`, `error`, `deliveries`, as deadLetterIngest-2.lua writes them) are left
  out; every other field is the platform's entry, appended as it was.
  KEYS[1] dead     STREAM  <prefix>:ingest:dead{i}
  KEYS[2] stream   STREAM  <prefix>:ingest:{i}
  ARGV[1] the dead letter's id
  Returns the new entry's id · false when it was no longer a dead letter · 0 when it has no field
  of the platform's to append (it stays dead)
]]
local found = redis.call('XRANGE', KEYS[1], ARGV[1], ARGV[1])
if #found == 0 then return false end
local fields = found[1][2]
local kept = {}
for i = 1, #fields, 2 do
  local name = fields[i]
  if name ~= 'entry' and name ~= 'error' and name ~= 'deliveries' then
    kept[#kept + 1] = name
    kept[#kept + 1] = fields[i + 1]
  end
end
if #kept == 0 then return 0 end
local id = redis.call('XADD', KEYS[2], '*', unpack(kept))
redis.call('XDEL', KEYS[1], ARGV[1])
return id
