--[[
  Installs the platform's answer for one user whose sources are not held (docs/semantics.md,
  "Where a user's sources live"): the answer's follows and topics with the changes recorded in
  the fetch marker on top (includes/recordedFollows.lua), the feed cursor from `readAt` and the
  notice cursor from `noticesSeen` where the user has none. A user held already keeps what they
  hold (another install won; changes since went to the lists). The marker is deleted either way.
  KEYS[1] authors  STRING  the authors the user follows, joined by ',' ('' when none: held)
  KEYS[2] topics   STRING  the topics the user follows, joined by ','
  KEYS[3] fetch    HASH    the fetch marker
  KEYS[4] cursors  HASH    ARGV[3] → the feed cursor
  KEYS[5] marks    HASH    seen → the notice cursor
  ARGV[1] follow cap · ARGV[2] topic cap · ARGV[3] the feed cursor's field
  ARGV[4] readAt or '' · ARGV[5] noticesSeen or '' · ARGV[6] the answer's follows joined by ','
  (de-duplicated, within the cap) · ARGV[7] its topics, likewise
  Returns { authors list or false, topics list or false, readAt or false }: the lists only when
  they are not the answer's (changes were recorded, or the user was held already)
]]
--[[
  A follow list (format v2, RedisKeys' header): a user's followed authors, or topics, as ONE
  STRING of the ids joined by ',' (ids never contain ','); '' follows nobody. Every helper scans
  the string once: bounded by the cap.
]]
local function followListHas(list, id)
  return string.find(',' .. list .. ',', ',' .. id .. ',', 1, true) ~= nil
end

local function followListSize(list)
  if list == '' then
    return 0
  end
  local _, commas = string.gsub(list, ',', ',')
  return commas + 1
end

-- The list without `id`, or nil when it does not hold it.
local function followListWithout(list, id)
  local wrapped = ',' .. list .. ','
  local at = string.find(wrapped, ',' .. id .. ',', 1, true)
  if not at then
    return nil
  end
  local rest = string.sub(wrapped, 1, at) .. string.sub(wrapped, at + #id + 2)
  return string.sub(rest, 2, -2)
end

local function followListIds(list)
  local ids = {}
  for id in string.gmatch(list, '[^,]+') do
    ids[#ids + 1] = id
  end
  return ids
end

-- SET writes the exact length (APPEND would leave the string's growth room allocated);
-- an empty list is deleted unless `keepEmpty` (the authors list of a held user, on demand).
local function writeFollowList(key, list, keepEmpty)
  if list == '' and not keepEmpty then
    redis.call('DEL', key)
  else
    redis.call('SET', key, list)
  end
end
--[[
  Where a follow change goes with a sources endpoint (docs/semantics.md, "Where a user's sources
  live"): to the lists of a user whose sources are held (their authors list exists); into the
  fetch marker while a fetch of them is in flight (beginFetch-2 made it, installSources-5 applies
  and deletes it); nowhere otherwise. The marker, HASH with a ttl:
    n       the last sequence number handed out
    c<k>    how many ids of kind k ('a' authors, 't' topics) it records
    r<k>    '1' once a replace of kind k was recorded (the answer's list of k no longer counts)
    <k>:<id>  the sequence number of the id's last change: positive added, negative removed
  One field per id touched: idempotent, bounded by the ids touched (and by each caller's limit).
]]
local function followChangeTarget(heldKey, marker, onDemand)
  if not onDemand or redis.call('EXISTS', heldKey) == 1 then
    return 'held'
  end
  if redis.call('EXISTS', marker) == 1 then
    return 'fetching'
  end
  return 'dropped'
end

-- False when the marker already records `limit` ids of the kind and not this one.
local function recordFollowChange(marker, kind, id, add, limit)
  local field = kind .. ':' .. id
  if redis.call('HEXISTS', marker, field) == 0 then
    if tonumber(redis.call('HGET', marker, 'c' .. kind) or '0') >= limit then
      return false
    end
    redis.call('HINCRBY', marker, 'c' .. kind, 1)
  end
  local seq = redis.call('HINCRBY', marker, 'n', 1)
  redis.call('HSET', marker, field, add and seq or -seq)
  return true
end

-- A replace forgets the kind's earlier changes and records its whole list as additions.
local function recordFollowReplace(marker, kind, ids)
  local all = redis.call('HGETALL', marker)
  local prefix = kind .. ':'
  local stale = {}
  for i = 1, #all, 2 do
    if string.sub(all[i], 1, 2) == prefix then
      stale[#stale + 1] = all[i]
    end
  end
  local chunk = 1000
  for i = 1, #stale, chunk do
    redis.call('HDEL', marker, unpack(stale, i, math.min(i + chunk - 1, #stale)))
  end
  redis.call('HSET', marker, 'r' .. kind, '1', 'c' .. kind, #ids)
  local last = redis.call('HINCRBY', marker, 'n', #ids)
  local first = last - #ids
  for i = 1, #ids, chunk do
    local fields = {}
    for j = i, math.min(i + chunk - 1, #ids) do
      fields[#fields + 1] = prefix .. ids[j]
      fields[#fields + 1] = first + j
    end
    redis.call('HSET', marker, unpack(fields))
  end
end

-- The marker's changes by kind: { replaced, adds = { {id, seq}, … }, removes = { [id] = true } }.
local function recordedFollowChanges(marker)
  local kinds = {
    a = { replaced = false, adds = {}, removes = {} },
    t = { replaced = false, adds = {}, removes = {} },
  }
  local all = redis.call('HGETALL', marker)
  for i = 1, #all, 2 do
    local field = all[i]
    if string.sub(field, 2, 2) == ':' then
      local changes = kinds[string.sub(field, 1, 1)]
      local seq = tonumber(all[i + 1])
      local id = string.sub(field, 3)
      if changes and seq > 0 then
        changes.adds[#changes.adds + 1] = { id, seq }
      elseif changes then
        changes.removes[id] = true
      end
    elseif string.sub(field, 1, 1) == 'r' and kinds[string.sub(field, 2)] then
      kinds[string.sub(field, 2)].replaced = true
    end
  end
  return kinds
end

--[[
  `ids` (the answer's list) with one kind's recorded changes on top, as follow() would apply
  them: without the removed ids (all of them after a replace), then the added ids in the order
  they were recorded, each while the list is under `cap` (follow-graph.ts, withRecordedChanges).
]]
local function withRecordedChanges(ids, changes, cap)
  local out = {}
  local has = {}
  if not changes.replaced then
    for _, id in ipairs(ids) do
      if not has[id] and not changes.removes[id] then
        out[#out + 1] = id
        has[id] = true
      end
    end
  end
  table.sort(changes.adds, function(x, y)
    return x[2] < y[2]
  end)
  for _, add in ipairs(changes.adds) do
    local id = add[1]
    if not has[id] and #out < cap then
      out[#out + 1] = id
      has[id] = true
    end
  end
  return out
end
local authorsKey, topicsKey, fetchKey, cursorsKey, marksKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local feedField = ARGV[3]

-- One kind's list after the install: the answer's own string when nothing was recorded for
-- it (the common case: no split, no join), else the answer with the changes on top.
local function installed(answer, changes, cap)
  if not changes.replaced and #changes.adds == 0 and next(changes.removes) == nil then
    return answer, false
  end
  return table.concat(withRecordedChanges(followListIds(answer), changes, cap), ','), true
end

local changed = true
if redis.call('EXISTS', authorsKey) == 0 then
  local changes = recordedFollowChanges(fetchKey)
  local follows, followsChanged = installed(ARGV[6], changes.a, tonumber(ARGV[1]))
  local topics, topicsChanged = installed(ARGV[7], changes.t, tonumber(ARGV[2]))
  changed = followsChanged or topicsChanged
  writeFollowList(authorsKey, follows, true)
  writeFollowList(topicsKey, topics, false)
  if ARGV[4] ~= '' and redis.call('HEXISTS', cursorsKey, feedField) == 0 then
    redis.call('HSET', cursorsKey, feedField, ARGV[4])
  end
  if ARGV[5] ~= '' and redis.call('HEXISTS', marksKey, 'seen') == 0 then
    redis.call('HSET', marksKey, 'seen', ARGV[5])
  end
end
redis.call('DEL', fetchKey)
if not changed then
  return { false, false, redis.call('HGET', cursorsKey, feedField) }
end
return {
  redis.call('GET', authorsKey) or '',
  redis.call('GET', topicsKey) or '',
  redis.call('HGET', cursorsKey, feedField),
}
