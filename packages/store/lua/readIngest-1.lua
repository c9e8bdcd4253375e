--[[
  XREADGROUP of new entries without blocking, the reply packed as one JSON text: a consumer
  decodes one string natively instead of seven RESP strings an entry (most of what a
  consumer spent per entry under load). The blocking read is left to the caller, for when
  this returns nothing.
  KEYS[1] stream   STREAM  <prefix>:ingest:{i}
  ARGV[1] group · ARGV[2] consumer · ARGV[3] count
  Returns '' when nothing is new, else the JSON array of entries, each [id, [field, value, …] ]
  (a NOGROUP error when the group or the stream is gone)
]]
local reply = redis.call('XREADGROUP', 'GROUP', ARGV[1], ARGV[2], 'COUNT', ARGV[3], 'STREAMS',
  KEYS[1], '>')
if not reply or not reply[1] or #reply[1][2] == 0 then return '' end
return cjson.encode(reply[1][2])
