// The key layout and the Lua scripts of RedisRegistry. An entry is one HASH of its definition
// (`init`, JSON) and its health and running stats, one field each; a SET per kind lists the
// entries. A field that is null is absent. Numbers are written with 17 significant digits, so a
// double read back is the double written.
import { redisScript } from "../../internal/redis-connection.js";

// URI-encoding leaves no ":" in a name, so no name can spell another entry's key.
const enc = encodeURIComponent;

/** The HASH of one entry. */
export function entryKey(prefix: string, kind: string, name: string): string {
  return `${prefix}entry:${kind}:${enc(name)}`;
}

/** The SET of a kind's entries (members: encoded names). */
export function indexKey(prefix: string, kind: string): string {
  return `${prefix}index:${kind}`;
}

/** What an index member is for `name`. */
export const memberOf = enc;

/**
 * Register (an upsert: a second register replaces the definition and keeps health and stats).
 * KEYS: entry, index. ARGV: init JSON, now, member. Returns the entry's fields.
 */
export const REGISTER = redisScript(`
if redis.call('EXISTS', KEYS[1]) == 1 then
  redis.call('HSET', KEYS[1], 'init', ARGV[1], 'updatedAt', ARGV[2])
else
  redis.call('HSET', KEYS[1], 'init', ARGV[1], 'registeredAt', ARGV[2], 'updatedAt', ARGV[2],
    'count', '0', 'failures', '0', 'consecutiveFailures', '0', 'totalLatencyMs', '0',
    'health', 'unknown', 'healthAuto', '1')
end
redis.call('SADD', KEYS[2], ARGV[3])
return redis.call('HGETALL', KEYS[1])
`);

/** KEYS: entry, index. ARGV: member. Returns 1 when the entry existed. */
export const UNREGISTER = redisScript(`
local existed = redis.call('DEL', KEYS[1])
redis.call('SREM', KEYS[2], ARGV[1])
return existed
`);

/**
 * A manual health report. KEYS: entry. ARGV: health, detail? (1/0), detail, now.
 * Returns the entry's fields, or nil when there is no such entry.
 */
export const SET_HEALTH = redisScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return false end
redis.call('HSET', KEYS[1], 'health', ARGV[1], 'healthAuto', '0', 'updatedAt', ARGV[4])
if ARGV[2] == '1' then
  redis.call('HSET', KEYS[1], 'healthDetail', ARGV[3])
else
  redis.call('HDEL', KEYS[1], 'healthDetail')
end
return redis.call('HGETALL', KEYS[1])
`);

/**
 * One invocation added to the running aggregates, and the automatic health rule, in one step
 * (the same rule as `applyInvocation` in registry/shared.ts). KEYS: entry.
 * ARGV: ok (1/0), latencyMs, now, unhealthyAfterFailures, error? (1/0), error.
 * Returns the entry's fields, or nil when there is no such entry.
 */
export const RECORD = redisScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return false end
local f = redis.call('HMGET', KEYS[1], 'count', 'failures', 'consecutiveFailures',
  'totalLatencyMs', 'minLatencyMs', 'maxLatencyMs', 'health', 'healthAuto')
local function num(v) return string.format('%.17g', v) end
local ms = tonumber(ARGV[2])
local health = f[7]
local before = health
local auto = f[8]
local consecutive = tonumber(f[3])
local set = {
  'count', num(tonumber(f[1]) + 1),
  'totalLatencyMs', num(tonumber(f[4]) + ms),
  'minLatencyMs', num(f[5] and math.min(tonumber(f[5]), ms) or ms),
  'maxLatencyMs', num(f[6] and math.max(tonumber(f[6]), ms) or ms),
  'lastLatencyMs', num(ms),
  'lastInvokedAt', ARGV[3],
}
local function put(field, value)
  set[#set + 1] = field
  set[#set + 1] = value
end
if ARGV[1] == '1' then
  consecutive = 0
  if health == 'unknown' or (auto == '1' and health == 'unhealthy') then
    health = 'healthy'
    auto = '1'
    redis.call('HDEL', KEYS[1], 'healthDetail')
  end
else
  consecutive = consecutive + 1
  local lastError = 'failed'
  if ARGV[5] == '1' then lastError = ARGV[6] end
  put('failures', num(tonumber(f[2]) + 1))
  put('lastError', lastError)
  local threshold = tonumber(ARGV[4])
  if threshold > 0 and consecutive >= threshold and health ~= 'unhealthy' then
    health = 'unhealthy'
    auto = '1'
    put('healthDetail', num(consecutive) .. ' consecutive failed invocations (last: ' .. lastError .. ')')
  end
end
put('consecutiveFailures', num(consecutive))
put('health', health)
put('healthAuto', auto)
if health ~= before then put('updatedAt', ARGV[3]) end
redis.call('HSET', KEYS[1], unpack(set))
return redis.call('HGETALL', KEYS[1])
`);

/**
 * Every entry of the given kinds, as one snapshot. KEYS: the kinds' index sets.
 * ARGV: the entry key prefix (`<prefix>entry:`), then each kind. Returns one field list per entry.
 */
export const DISCOVER = redisScript(`
local out = {}
for i, index in ipairs(KEYS) do
  local base = ARGV[1] .. ARGV[i + 1] .. ':'
  for _, member in ipairs(redis.call('SMEMBERS', index)) do
    local fields = redis.call('HGETALL', base .. member)
    if #fields > 0 then out[#out + 1] = fields end
  end
end
return out
`);
