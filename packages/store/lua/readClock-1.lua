--[[
  The server's clock in ms, read on the shard of KEYS[1] (the {g} slot on a Redis Cluster: the
  shard that decides node liveness). Nothing is read or written.
  KEYS[1] any key of the slot whose server is asked
]]
--- @include "storeNow"
return storeNow()
