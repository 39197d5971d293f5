"""The Lua that makes each limits update in Redis one atomic round trip.

Keys of one tenant share a hash tag (``gw:v1:{tenant}:...``), so a cluster would keep them
on one slot; every key a script reads or writes is derived from that prefix.

- ``...:leases``: sorted set, a request id per admitted request, scored by the Redis time
  (ms) after which it is void. A gateway killed mid-request leaves its leases behind; the
  next admission purges those whose time has passed, and gives back what they reserved.
- ``...:held``: hash, request id -> ``"<USD reserved> <budget key> ..."``, what a lease
  reserved and where, so that a purge can give it back without the dead gateway.
- ``...:rpm`` / ``...:tpm``: token buckets (hash: level, ts in ms, size), refilled
  continuously by Redis ``TIME``: gateways' clocks never enter a shared count.
- ``...:b:<period label>``: a budget counter (hash: spent, reserved).

Numbers come back as strings: Redis truncates a Lua number in a reply to an integer.
"""

from __future__ import annotations

from typing import Final

# KEYS: 1 leases, 2 held, 3 rpm, 4 tpm, 5.. budget counters (one per ARGV budget).
# ARGV: 1 request id, 2 max concurrency (-1: none), 3 rpm (-1), 4 tpm (-1), 5 tokens,
#       6 USD to reserve, 7 lease ttl ms, 8 budget count, 9.. budget limits (USD),
#       then the held value, then the budget counters' ttl (s).
# Reply: {0, in_flight} admitted; {1, in_flight} concurrency; {2, i, spent, reserved}
#        budget i; {3, 1|2, wait s} rpm|tpm. Admitted: {0, in flight, then each budget's
#        USD used with this request's reservation}.
ADMIT: Final = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local id = ARGV[1]

local function give_back(held)
  local cost = nil
  for word in string.gmatch(held, '%S+') do
    if cost == nil then cost = tonumber(word)
    else redis.call('HINCRBYFLOAT', word, 'reserved', -cost) end
  end
end

local expired = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now)
for _, old in ipairs(expired) do
  local held = redis.call('HGET', KEYS[2], old)
  if held then give_back(held); redis.call('HDEL', KEYS[2], old) end
  redis.call('ZREM', KEYS[1], old)
end

local in_flight = redis.call('ZCARD', KEYS[1])
local max_conc = tonumber(ARGV[2])
if max_conc >= 0 and in_flight >= max_conc then return {1, in_flight} end

local cost = tonumber(ARGV[6])
local n = tonumber(ARGV[8])
local used = {}
for i = 1, n do
  local limit = tonumber(ARGV[8 + i])
  local v = redis.call('HMGET', KEYS[4 + i], 'spent', 'reserved')
  local spent = tonumber(v[1]) or 0
  local reserved = math.max(0, tonumber(v[2]) or 0)
  if spent + reserved + cost > limit or spent >= limit then
    return {2, i, tostring(spent), tostring(reserved)}
  end
  used[i] = tostring(spent + reserved + cost)
end

local function level(key, size)
  local v = redis.call('HMGET', key, 'level', 'ts')
  local lvl, ts = tonumber(v[1]), tonumber(v[2])
  if lvl == nil or ts == nil then return size end
  return math.min(size, lvl + math.max(0, now - ts) * size / 60000)
end
local rpm, tpm, tokens = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local rl, tl
if rpm >= 0 then
  rl = level(KEYS[3], rpm)
  if rl < 1 then return {3, 1, tostring((1 - rl) * 60 / rpm)} end
end
if tpm >= 0 then
  tl = level(KEYS[4], tpm)
  if tl < tokens then return {3, 2, tostring((tokens - tl) * 60 / tpm)} end
end

-- Every check passed: take.
local ttl = tonumber(ARGV[7])
if rpm >= 0 then
  redis.call('HSET', KEYS[3], 'level', rl - 1, 'ts', now, 'size', rpm)
  redis.call('PEXPIRE', KEYS[3], 120000)
end
if tpm >= 0 then
  redis.call('HSET', KEYS[4], 'level', tl - tokens, 'ts', now, 'size', tpm)
  redis.call('PEXPIRE', KEYS[4], 120000)
end
-- The leases and what they hold live as long as the budgets: were they to vanish before
-- a purge, the reservations of a dead gateway's requests would never be given back.
local keep = tonumber(ARGV[10 + n])
redis.call('ZADD', KEYS[1], now + ttl, id)
redis.call('EXPIRE', KEYS[1], keep)
if n > 0 then
  for i = 1, n do
    redis.call('HINCRBYFLOAT', KEYS[4 + i], 'reserved', cost)
    redis.call('EXPIRE', KEYS[4 + i], keep)
  end
  redis.call('HSET', KEYS[2], id, ARGV[9 + n])
  redis.call('EXPIRE', KEYS[2], keep)
end
return {0, in_flight + 1, unpack(used)}
"""

# KEYS: 1 leases, 2 held, 3 tpm, 4.. budget counters.
# ARGV: 1 request id, 2 tokens to give back to the tpm bucket (projected - actual),
#       3 USD billed, 4 the budget counters' ttl (s).
# The reservation goes back only if the lease is still held: a purge may have given it
# back already (the request outlived its lease). What was billed is spent either way.
SETTLE: Final = """
local id = ARGV[1]
redis.call('ZREM', KEYS[1], id)
local held = redis.call('HGET', KEYS[2], id)
if held then
  local cost = nil
  for word in string.gmatch(held, '%S+') do
    if cost == nil then cost = tonumber(word)
    else redis.call('HINCRBYFLOAT', word, 'reserved', -cost) end
  end
  redis.call('HDEL', KEYS[2], id)
end
local refund = tonumber(ARGV[2])
if refund ~= 0 and redis.call('EXISTS', KEYS[3]) == 1 then
  redis.call('HINCRBYFLOAT', KEYS[3], 'level', refund)
end
local billed = tonumber(ARGV[3])
if billed > 0 then
  for i = 4, #KEYS do
    redis.call('HINCRBYFLOAT', KEYS[i], 'spent', billed)
    redis.call('EXPIRE', KEYS[i], tonumber(ARGV[4]))
  end
end
return 1
"""

# Budget spend read back from the ledger: each KEYS[i] (a budget counter) is raised to
# ARGV[i] USD if it holds less, never lowered (what the fleet counted since the ledger
# was read stays); ARGV[#KEYS + 1] is the counters' TTL in seconds.
TOP_UP = """
local ttl = ARGV[#KEYS + 1]
for index, key in ipairs(KEYS) do
  local spent = tonumber(redis.call('HGET', key, 'spent') or '0')
  if tonumber(ARGV[index]) > spent then
    redis.call('HSET', key, 'spent', ARGV[index])
  end
  redis.call('EXPIRE', key, ttl)
end
return #KEYS
"""
