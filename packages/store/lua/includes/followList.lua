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
