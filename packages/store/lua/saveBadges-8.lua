--[[
  Store the badge states of users of one pool and publish the changes. A core's writes carry
  the pool's fencing token; a gateway's (a cold start, a read) pass "-".

  A core proposes each user's next state from the state it last stored or loaded for that user
  (its belief). Such a "blind" write is stored as it comes, with one variadic HSET per chunk and
  no string work per user, unless the user's stored state may differ from that belief:
  - another writer changed it: an unfenced write that changes the state of a user who is in the
    pool's presence set adds the user to the pool's touched set (a user outside it is held by no
    core, or by one about to read the offline event that took it out);
  - the user's presence changed after the pool log position the core has read up to (so the core
    may still hold a user who left; a gateway's write to them was not recorded);
  - the log was trimmed past that position, or no position is given: every write is decided.
  The script decides those writes itself, and every write whose writer has no belief (the
  "decide" segment): equal counts keep the stored version, other counts take the stored version
  + 1, and nothing stored takes a new epoch at version 1. The answer tells the writer what was
  stored for each decided write. A fenced write removes the users it decided from the touched
  set, and the users in it who are no longer present.

  KEYS[1] fence   STRING  the pool's current fencing token (nextFence-2.lua)
  KEYS[2] stale   STRING  fenced writes refused for not carrying the current token
  KEYS[3] routes  HASH    user → "gateway=expiry;…", the gateways holding the user (expiry: ms of
                          this server's TIME)
  KEYS[4] badges  HASH    user → "<epoch>|<version>|<computedAt>|<counts>", counts being
                          "name=value,…" sorted by name, non-zero only (docs/redis-keys.md)
  KEYS[5] touched SET     present users whose state an unfenced write changed since the pool's
                          owner last wrote them (emptied when a new owner takes the pool)
  KEYS[6] online  ZSET    the pool's presence: user → expiry
  KEYS[7] events  STREAM  the pool's change log: k <kind> u <user>
  KEYS[8] sent    HASH    gateway → the number of messages published on its channel of the pool
  ARGV[1] fence      the writer's token, or "-" for an unfenced write
  ARGV[2] computedAt, the batch's (each proposed state carries its own, which a decided write takes)
  ARGV[3] epoch for a user with no stored state
  ARGV[4] channel    the pool's badge channel
  ARGV[5] PUBLISH or SPUBLISH
  ARGV[6] gateway channel prefix: the pool's channel of a gateway is this plus its id
  ARGV[7] the pool's written channel (a core's changes, published only while someone listens)
  ARGV[8] D, the number of writes in the decide segment
  ARGV[9] the pool log position the writer has read up to ("" when it has none)
  ARGV[10…] the writes, two arguments each: the user, then its proposed state (packed). The
          first D are decided by the script (only their computedAt and counts are read); the
          others are blind.
  A message is the writer's token (or "-") on its first line, then two lines per change: the
  user, then the stored state. A gateway's message adds to its first line a space and its
  number on that channel (1, 2, …, counted in KEYS[8]): a gateway that heard a lower number
  last, or finds a higher one stored, lost a message.
  Returns -1 when the token is not the pool's current one, or the pool has none (nothing
  written, the refusal counted);
  else one string: the number of changes on the first line, then, for each decided write, a
  line "<index>|<1 changed, 0 not>|<stored state now>" (index from 1 in the order of the
  writes); every other write stored its proposed state and changed it.
]]
--- @include "logTrimmedAfter"
--- @include "storeNow"
--- @include "routedByGateway"
local fenceKey, staleKey, routesKey, badgesKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local touchedKey, onlineKey, eventsKey, sentKey = KEYS[5], KEYS[6], KEYS[7], KEYS[8]
local fenced = ARGV[1] ~= '-'
local header, freshEpoch = ARGV[1], ARGV[3]
local channel, publish, gatewayPrefix, writtenChannel = ARGV[4], ARGV[5], ARGV[6], ARGV[7]
local seenLog = ARGV[9]
local find, sub = string.find, string.sub

-- items[FIRST + 2k - 2] is the user of the k-th write, the next item its proposed state.
local items, FIRST, last = ARGV, 10, #ARGV
-- Lua's unpack is bounded by its C stack: variadic calls go in chunks.
local CHUNK = 3000
local blindFrom

-- Item position → the decided state, and whether it changed the user's state (step 5).
local decidedState, decidedChanged = {}, {}

-- 1. A fenced write carries the pool's current token, or it is refused and the refusal counted.
-- A token newer than the stored one proves that Redis lost the newer token's issue (a stored
-- token rolled back, as by a lost AOF second or a replica promoted behind): the stored one is
-- deleted, so that no token is accepted until an owner takes the pool anew (nextFence-2.lua).
-- Tokens are decimal digits, compared as such; a missing fence key accepts nothing.
local function refusedAsStale()
  if not fenced then return false end
  local token, current = ARGV[1], redis.call('GET', fenceKey)
  if token == current then return false end
  if current and (#token > #current or (#token == #current and token > current)) then
    redis.call('DEL', fenceKey)
  end
  redis.call('INCR', staleKey)
  return true
end

-- The users the pool log names after `position`: their presence changed since.
local function usersLoggedAfter(position)
  local users = {}
  for _, entry in ipairs(redis.call('XRANGE', eventsKey, '(' .. position, '+')) do
    local fields = entry[2]
    for i = 1, #fields, 2 do
      if fields[i] == 'u' then users[fields[i + 1]] = true end
    end
  end
  return users
end

-- Adds the blind writes whose user is in the touched set, asking about the batch's users
-- instead of reading a set larger than the batch.
local function decideTouchedBlindWrites(decide)
  local isDecided = {}
  for k = 1, #decide do
    isDecided[decide[k]] = true
  end
  local users = {}
  for at = blindFrom, last, 2 do
    users[#users + 1] = items[at]
  end
  for first = 1, #users, CHUNK do
    local flags = redis.call('SMISMEMBER', touchedKey, unpack(users, first, math.min(first + CHUNK - 1, #users)))
    for k = 1, #flags do
      local at = blindFrom + 2 * (first + k - 2)
      if flags[k] == 1 and not isDecided[at] then decide[#decide + 1] = at end
    end
  end
end

-- 2. The writes the script decides, as the item positions of their users: the decide segment,
-- then the blind writes whose user's stored state may differ from the writer's belief. Also
-- what is known of the touched set: `touched` > 0 when it has members that were not read,
-- `touchedMembers` its members when they were.
local function writesToDecide()
  local decide = {}
  for at = FIRST, blindFrom - 1, 2 do
    decide[#decide + 1] = at
  end
  local touched, touchedMembers = 0, nil
  if fenced and blindFrom <= last then
    if seenLog == '' or (redis.call('EXISTS', eventsKey) == 1 and logTrimmedAfter(eventsKey, seenLog)) then
      for at = blindFrom, last, 2 do
        decide[#decide + 1] = at
      end
    else
      local suspect = usersLoggedAfter(seenLog)
      touched = redis.call('SCARD', touchedKey)
      if touched > 0 and touched <= (last - blindFrom + 1) / 2 then
        touchedMembers = redis.call('SMEMBERS', touchedKey)
        for _, user in ipairs(touchedMembers) do
          suspect[user] = true
        end
        touched = 0
      end
      if next(suspect) ~= nil then
        for at = blindFrom, last, 2 do
          if suspect[items[at]] then decide[#decide + 1] = at end
        end
      end
      if touched > 0 then decideTouchedBlindWrites(decide) end
    end
  end
  if fenced and touched == 0 and touchedMembers == nil and #decide > 0 then
    touched = redis.call('SCARD', touchedKey)
  end
  return decide, touched, touchedMembers
end

-- 3. What is stored for the decided writes, read before the blind writes go in.
local function readStored(decide)
  local stored = {}
  if #decide > 0 then
    local users = {}
    for k = 1, #decide do
      users[k] = items[decide[k]]
    end
    for first = 1, #users, CHUNK do
      local states = redis.call('HMGET', badgesKey, unpack(users, first, math.min(first + CHUNK - 1, #users)))
      for k = 1, #states do
        stored[first + k - 1] = states[k]
      end
    end
  end
  return stored
end

-- 4. Every blind write goes in as proposed (step 5 puts back those it decided otherwise).
local function storeBlindWrites()
  for at = blindFrom, last, 2 * CHUNK do
    redis.call('HSET', badgesKey, unpack(items, at, math.min(at + 2 * CHUNK - 1, last)))
  end
end

-- A packed state's epoch, version, counts and computedAt.
local function split(packed)
  local a = find(packed, '|', 1, true)
  local b = find(packed, '|', a + 1, true)
  local c = find(packed, '|', b + 1, true)
  return sub(packed, 1, a - 1), tonumber(sub(packed, a + 1, b - 1)), sub(packed, c + 1), sub(packed, b + 1, c - 1)
end

-- 5. Decide each decided write from the stored state and store the outcome. Returns the number
-- of changes, the answer's line for each decided write, and the users an unfenced write changed.
local function decideWrites(decide, stored)
  local changes = (last - blindFrom + 1) / 2
  local corrections, writes, changedUsers = {}, {}, {}
  for k = 1, #decide do
    local at = decide[k]
    local user, now = items[at], stored[k]
    -- A write's own time (a user's counters' watermark) or the batch's.
    local _, _, counts, computedAt = split(items[at + 1])
    local state, changed
    if not now then
      state, changed = freshEpoch .. '|1|' .. computedAt .. '|' .. counts, true
    else
      local epoch, version, oldCounts = split(now)
      if oldCounts == counts then
        -- A cold start says when it looked; a core's unchanged counts are not rewritten.
        state, changed = fenced and now or (epoch .. '|' .. version .. '|' .. computedAt .. '|' .. counts), false
      else
        state, changed = epoch .. '|' .. (version + 1) .. '|' .. computedAt .. '|' .. counts, true
      end
    end
    decidedState[at], decidedChanged[at] = state, changed
    local blind = at >= blindFrom
    if blind and not changed then changes = changes - 1 end
    if not blind and changed then changes = changes + 1 end
    -- A blind write that went in is put back to the stored state when nothing changed.
    if changed or not fenced or blind then
      writes[#writes + 1] = user
      writes[#writes + 1] = state
    end
    if changed and not fenced then changedUsers[#changedUsers + 1] = user end
    corrections[#corrections + 1] = ((at - FIRST) / 2 + 1) .. (changed and '|1|' or '|0|') .. state
  end
  for at = 1, #writes, 2 * CHUNK do
    redis.call('HSET', badgesKey, unpack(writes, at, math.min(at + 2 * CHUNK - 1, #writes)))
  end
  return changes, corrections, changedUsers
end

-- 6. The touched set: a fenced write removes the users it decided (and, when it read the set,
-- the members no longer present); an unfenced one adds the present users it changed.
local function updateTouched(decide, touched, touchedMembers, changedUsers)
  if fenced then
    local gone = {}
    if touched > 0 then
      for k = 1, #decide do
        gone[#gone + 1] = items[decide[k]]
      end
    elseif touchedMembers then
      local inBatch = {}
      for k = 1, #decide do
        inBatch[items[decide[k]]] = true
      end
      for _, user in ipairs(touchedMembers) do
        if inBatch[user] or not redis.call('ZSCORE', onlineKey, user) then gone[#gone + 1] = user end
      end
    end
    for first = 1, #gone, CHUNK do
      redis.call('SREM', touchedKey, unpack(gone, first, math.min(first + CHUNK - 1, #gone)))
    end
  else
    local present = {}
    for k = 1, #changedUsers do
      if redis.call('ZSCORE', onlineKey, changedUsers[k]) then present[#present + 1] = changedUsers[k] end
    end
    for first = 1, #present, CHUNK do
      redis.call('SADD', touchedKey, unpack(present, first, math.min(first + CHUNK - 1, #present)))
    end
  end
end

-- The writes that changed their user's state, in write order: users and stored states.
local function changedWrites()
  local users, states = {}, {}
  for at = FIRST, last, 2 do
    local state = decidedState[at]
    if state == nil then
      users[#users + 1] = items[at]
      states[#states + 1] = items[at + 1]
    elseif decidedChanged[at] then
      users[#users + 1] = items[at]
      states[#states + 1] = state
    end
  end
  return users, states
end

-- Whether anyone would hear a message on `target`. A core's writes go to the written channel,
-- which only audits (tests) listen to: a message of a thousand states is not built for nobody.
-- An unfenced write's is for the pool's owner.
local function listened(target)
  if not fenced then return true end
  if publish == 'SPUBLISH' then
    return redis.call('PUBSUB', 'SHARDNUMSUB', target)[2] > 0
  end
  -- A pattern subscription may match it too (no role subscribes to patterns; tests do).
  -- Both count this server's subscribers only: on a Redis Cluster the store publishes
  -- with SPUBLISH (above), whose subscribers are all on the pool's shard.
  return redis.call('PUBSUB', 'NUMSUB', target)[2] > 0 or redis.call('PUBSUB', 'NUMPAT') > 0
end

-- The changes as "user\nstate" lines on `target`; a batch nobody decided publishes its writes
-- as they came. Returns the changed writes when it listed them.
local function publishToPool(target, decide)
  local users, states, message
  if #decide == 0 then
    message = table.concat(items, '\n', blindFrom, last)
  else
    users, states = changedWrites()
    local lines = {}
    for k = 1, #users do
      lines[2 * k - 1], lines[2 * k] = users[k], states[k]
    end
    message = table.concat(lines, '\n')
  end
  redis.call(publish, target, header .. '\n' .. message)
  return users, states
end

-- Each change to the channel of every gateway whose route to its user has not lapsed. Route
-- expiries are ms of this server's clock (routeUsers-1.lua), not of the writer's.
local function routeToGateways(users, states)
  local gateways, byGateway = routedByGateway(routesKey, users, states, storeNow())
  for _, gateway in ipairs(gateways) do
    local number = redis.call('HINCRBY', sentKey, gateway, 1)
    redis.call(publish, gatewayPrefix .. gateway, header .. ' ' .. number .. '\n' .. table.concat(byGateway[gateway], '\n'))
  end
end

-- 7. Publish the changes: an unfenced write's on the pool's channel, a core's on the written
-- channel, and each to the gateways holding its user.
local function publishChanges(decide)
  local users, states
  local target = fenced and writtenChannel or channel
  if listened(target) then users, states = publishToPool(target, decide) end
  if redis.call('EXISTS', routesKey) == 1 then
    if users == nil then users, states = changedWrites() end
    routeToGateways(users, states)
  end
end

if refusedAsStale() then return -1 end
blindFrom = FIRST + 2 * tonumber(ARGV[8])
local decide, touched, touchedMembers = writesToDecide()
local stored = readStored(decide)
storeBlindWrites()
local changes, corrections, changedUsers = decideWrites(decide, stored)
updateTouched(decide, touched, touchedMembers, changedUsers)
if changes > 0 then publishChanges(decide) end
if #corrections == 0 then return tostring(changes) end
return changes .. '\n' .. table.concat(corrections, '\n')
