// The key layout and the Lua scripts of RedisLimitStore. Every key of a store shares one hash tag
// (`{limits}`), so that one check over several rules is one atomic script, also on Redis Cluster
// (where a store's keys then live on one node).
import { redisScript } from "../../internal/redis-connection.js";

/** The keys of a store under `prefix`: windows, ledgers, and a ledger's recent settlements. */
export function limitKeys(prefix: string): {
  window: (id: string) => string;
  ledger: (id: string) => string;
  settled: (ledgerId: string) => string;
} {
  // Ids come URI-encoded from the engine; the kinds are apart ("w:", "b:", "s:"), so no two
  // kinds ever share a key whatever their ids.
  const base = `${prefix}{limits}:`;
  return {
    window: (id) => `${base}w:${id}`,
    ledger: (id) => `${base}b:${id}`,
    settled: (id) => `${base}s:${id}`,
  };
}

/** How long a ledger remembers a settlement, so that sending it again does not charge twice. */
export const SETTLED_MARK_MS = 15 * 60 * 1000;

/**
 * One check: every ledger, then every window; with `record` and nothing refused, a slot in each
 * window (ZSET of admission times) and the hold on each ledger (HASH: start, tokens, cost, and
 * `h:<hold id>` = "tokens|cost|expires at" per hold). Expired holds are dropped as they are read;
 * a ledger whose window ended starts again empty.
 * KEYS: ledgers (n), then windows. ARGV: now, record (1/0), hold id, hold expires at, usage
 * tokens, usage cost, n, member; per ledger: window ms, max tokens ('' = none), max cost ('' =
 * none), hold tokens, hold cost; per window: limit, window ms.
 * Returns {0} admitted, {1, index, tokens, cost, held tokens, retry ms} a ledger refused,
 * {2, index, retry ms} a window refused (numbers that may be fractional are strings).
 */
export const ADMIT = redisScript(`
local now = tonumber(ARGV[1])
local record = ARGV[2] == '1'
local own = 'h:' .. ARGV[3]
local expires = tonumber(ARGV[4])
local ut, uc = tonumber(ARGV[5]), tonumber(ARGV[6])
local n = tonumber(ARGV[7])
local member = ARGV[8]
local states = {}
for i = 1, n do
  local key = KEYS[i]
  local a = 8 + (i - 1) * 5
  local win = tonumber(ARGV[a + 1])
  local maxT, maxC = tonumber(ARGV[a + 2]), tonumber(ARGV[a + 3])
  local f = redis.call('HGETALL', key)
  local start, tokens, cost, heldT, heldC, mine = nil, 0, 0, 0, 0, nil
  local dead = {}
  for j = 1, #f, 2 do
    local name, v = f[j], f[j + 1]
    if name == 'start' then start = tonumber(v)
    elseif name == 'tokens' then tokens = tonumber(v)
    elseif name == 'cost' then cost = tonumber(v)
    else
      local t, c, e = string.match(v, '^([^|]*)|([^|]*)|(.*)$')
      t, c, e = tonumber(t), tonumber(c), tonumber(e)
      if e <= now then dead[#dead + 1] = name
      elseif name == own then mine = { t, c, e }
      else heldT = heldT + t; heldC = heldC + c end
    end
  end
  if start ~= nil and start + win <= now then
    redis.call('DEL', key)
    start, tokens, cost, heldT, heldC, mine = nil, 0, 0, 0, 0, nil
  else
    -- In chunks: unpack() of a very long list would overflow Lua's stack.
    for j = 1, #dead, 500 do
      redis.call('HDEL', key, unpack(dead, j, math.min(j + 499, #dead)))
    end
  end
  local T, C = tokens + heldT + ut, cost + heldC + uc
  if (maxT ~= nil and T >= maxT) or (maxC ~= nil and C >= maxC) then
    return { 1, i - 1, string.format('%.17g', T), string.format('%.17g', C), string.format('%.17g', heldT),
      string.format('%.17g', (start or now) + win - now) }
  end
  states[i] = { start, mine, win }
end
local m = #KEYS - n
local b = 8 + n * 5
for i = 1, m do
  local key = KEYS[n + i]
  local limit, win = tonumber(ARGV[b + i * 2 - 1]), tonumber(ARGV[b + i * 2])
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now - win)
  if redis.call('ZCARD', key) >= limit then
    local oldest = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
    return { 2, i - 1, string.format('%.17g', tonumber(oldest[2]) + win - now) }
  end
end
if not record then return { 0 } end
for i = 1, m do
  local key = KEYS[n + i]
  local win = tonumber(ARGV[b + i * 2])
  redis.call('ZADD', key, now, member)
  redis.call('PEXPIRE', key, math.max(1, math.ceil(win)))
end
for i = 1, n do
  local key = KEYS[i]
  local a = 8 + (i - 1) * 5
  local st = states[i]
  local start, mine, win = st[1], st[2], st[3]
  if start == nil then
    start = now
    redis.call('HSET', key, 'start', ARGV[1])
  end
  local ht, hc, e = tonumber(ARGV[a + 4]), tonumber(ARGV[a + 5]), expires
  if mine ~= nil then
    ht, hc, e = math.max(ht, mine[1]), math.max(hc, mine[2]), math.max(e, mine[3])
  end
  if ht > 0 or hc > 0 then
    redis.call('HSET', key, own, string.format('%.17g|%.17g|%.17g', ht, hc, e))
  end
  redis.call('PEXPIRE', key, math.max(1, math.ceil(start + win - now)))
end
return { 0 }
`);

/**
 * One settlement, applied once: the first ledger's recent settlements (ZSET hold id → kept
 * until, trimmed on each settlement) refuse the same one sent again; then each ledger (started
 * again if its window ended) drops the hold and is charged the usage.
 * KEYS: ledgers, then the first ledger's settlements. ARGV: now, hold id, tokens, cost, mark ms;
 * per ledger: window ms. Returns 1 when applied, 0 when it had been already.
 */
export const SETTLE = redisScript(`
local now = tonumber(ARGV[1])
local n = #KEYS - 1
local marks = KEYS[n + 1]
redis.call('ZREMRANGEBYSCORE', marks, '-inf', now)
if redis.call('ZSCORE', marks, ARGV[2]) then return 0 end
redis.call('ZADD', marks, now + tonumber(ARGV[5]), ARGV[2])
redis.call('PEXPIRE', marks, ARGV[5])
for i = 1, n do
  local key = KEYS[i]
  local win = tonumber(ARGV[5 + i])
  local start = tonumber(redis.call('HGET', key, 'start'))
  if start == nil or start + win <= now then
    redis.call('DEL', key)
    start = now
    redis.call('HSET', key, 'start', ARGV[1])
  end
  redis.call('HDEL', key, 'h:' .. ARGV[2])
  redis.call('HINCRBYFLOAT', key, 'tokens', ARGV[3])
  redis.call('HINCRBYFLOAT', key, 'cost', ARGV[4])
  redis.call('PEXPIRE', key, math.max(1, math.ceil(start + win - now)))
end
return 1
`);
