// The key layout and the Lua scripts of RedisMemoryStore. Each namespace's keys share one hash tag
// (`{<namespace>}`), so the scripts touch a single Redis Cluster slot.
import { redisScript } from "../../internal/redis-connection.js";

/** The keys of one namespace (and one session of its hot tier). */
export interface NamespaceKeys {
  /** LIST of item JSON: the session's newest turns, oldest first. */
  readonly hot: string;
  /** ZSET id → sequence number: warm items. */
  readonly warm: string;
  /** HASH id → item JSON, for every warm or cold item. */
  readonly items: string;
  /** HASH fact key → id of the fact that currently holds it. */
  readonly keys: string;
  /** ZSET id → sequence number: cold items. */
  readonly cold: string;
  /** HASH id → vector (float64, little-endian). */
  readonly vectors: string;
  /** Counter of the namespace's writes: the order of warm and cold items. */
  readonly seq: string;
}

// URI-encoding leaves no ":" (nor "{" or "}") inside a part, so a namespace or session given by a
// caller can never spell another's keys, nor end the hash tag early.
const enc = encodeURIComponent;

/** The keys of `namespace` under `prefix`, with `session`'s hot list. */
export function namespaceKeys(prefix: string, namespace: string, session: string): NamespaceKeys {
  const base = `${prefix}{${enc(namespace)}}:`;
  return {
    hot: `${base}hot:${enc(session)}`,
    warm: `${base}warm`,
    items: `${base}items`,
    keys: `${base}keys`,
    cold: `${base}cold`,
    vectors: `${base}vectors`,
    seq: `${base}seq`,
  };
}

/** A vector as the bytes the store keeps: float64, little-endian whatever the machine. */
export function vectorBytes(vector: readonly number[]): Buffer {
  // Float64Array.from reads the whole source first: a source that throws leaves nothing written.
  const values = Float64Array.from(vector);
  const out = Buffer.allocUnsafe(values.length * 8);
  for (let i = 0; i < values.length; i++) out.writeDoubleLE(values[i] as number, i * 8);
  return out;
}

/** The vector of {@link vectorBytes}. */
export function vectorOf(bytes: Buffer): Float64Array {
  const out = new Float64Array(bytes.length >> 3);
  for (let i = 0; i < out.length; i++) out[i] = bytes.readDoubleLE(i * 8);
  return out;
}

/**
 * One write, all tiers in one script (Redis runs a script alone, so no reader sees half of it,
 * and its first write is its first command, so a refused script has written nothing).
 * KEYS: hot, warm, items, keys, cold, vectors, seq.
 * ARGV: hot? (1/0), hot limit, warm? (1/0), fact key? (1/0), fact key, id, item JSON,
 * vector? (1/0), vector bytes.
 */
export const WRITE = redisScript(`
local seq = redis.call('INCR', KEYS[7])
local id = ARGV[6]
if ARGV[1] == '1' then
  local limit = tonumber(ARGV[2])
  if limit > 0 then
    redis.call('RPUSH', KEYS[1], ARGV[7])
    redis.call('LTRIM', KEYS[1], -limit, -1)
  else
    redis.call('DEL', KEYS[1])
  end
end
local indexed = false
if ARGV[3] == '1' then
  if ARGV[4] == '1' then
    local previous = redis.call('HGET', KEYS[4], ARGV[5])
    if previous then
      redis.call('ZREM', KEYS[2], previous)
      redis.call('ZREM', KEYS[5], previous)
      redis.call('HDEL', KEYS[3], previous)
      redis.call('HDEL', KEYS[6], previous)
    end
    redis.call('HSET', KEYS[4], ARGV[5], id)
  end
  redis.call('ZADD', KEYS[2], seq, id)
  indexed = true
end
if ARGV[8] == '1' then
  redis.call('ZADD', KEYS[5], seq, id)
  redis.call('HSET', KEYS[6], id, ARGV[9])
  indexed = true
end
if indexed then redis.call('HSET', KEYS[3], id, ARGV[7]) end
return seq
`);

/**
 * One read of every tier, as one consistent snapshot: the newest hot turns, the newest warm
 * items, and the newest cold candidates with their vectors and sequence numbers.
 * KEYS: hot, warm, items, cold, vectors. ARGV: hot limit, warm limit, cold candidates.
 * Returns { hot items, warm items, cold items, cold vectors, cold sequence numbers }.
 */
export const READ = redisScript(`
local function hmget(key, ids)
  local out = {}
  -- In chunks: unpack() of a very long list would overflow Lua's stack.
  for i = 1, #ids, 500 do
    local chunk = {}
    for j = i, math.min(i + 499, #ids) do chunk[#chunk + 1] = ids[j] end
    local got = redis.call('HMGET', key, unpack(chunk))
    for k = 1, #chunk do out[#out + 1] = got[k] end
  end
  return out
end
local hot = {}
local h = tonumber(ARGV[1])
if h > 0 then hot = redis.call('LRANGE', KEYS[1], -h, -1) end
local warm = {}
local w = tonumber(ARGV[2])
if w > 0 then warm = hmget(KEYS[3], redis.call('ZREVRANGE', KEYS[2], 0, w - 1)) end
local items, vectors, seqs = {}, {}, {}
local c = tonumber(ARGV[3])
if c > 0 then
  local scored = redis.call('ZREVRANGE', KEYS[4], 0, c - 1, 'WITHSCORES')
  local ids = {}
  for i = 1, #scored, 2 do
    ids[#ids + 1] = scored[i]
    seqs[#seqs + 1] = scored[i + 1]
  end
  items = hmget(KEYS[3], ids)
  vectors = hmget(KEYS[5], ids)
end
return { hot, warm, items, vectors, seqs }
`);
