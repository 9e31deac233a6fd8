// The Lua scripts of RedisRunStore. Each runs atomically in Redis: a transition of a run is
// written only if the record is still at the version the writer read (compare-and-set), so a
// worker whose lease was taken over (the record changed under it) never overwrites anything.
//
// Key layout under the store's prefix `p` (the scripts build the same names as redisKey):
//   p:run:<id>              hash: doc (record JSON), v (version), status, seq, job, idem, and
//                           what the claim script needs without parsing doc: fence, att
//                           (attempt), avail (availableAt), ca (createdAt); claim (JSON
//                           {w, at, exp}) when the claim script claimed the run after doc was
//                           written: readers apply it to doc (records.ts), the next commit folds it
//   p:ev:<id>               stream of the run's events; also the channel that announces them
//   p:steps:<id>            hash of committed steps; p:in:<id> hash of answers; p:cp:<id> checkpoint
//   p:idem:<queue>:<key>    the run id that took an idempotency key
//   p:list:<queue>          zset of the queue's runs by createdAt; p:st:<queue>:<status> by status
//   p:pend:<queue>          zset of pending runs by availableAt; p:act:<queue> running runs by
//                           lease expiry; p:fin:<queue> final runs by finishedAt
//   p:cancel                channel of cancel requests (message: the run id)
//   p:bull:...              BullMQ's own keys

/** The key `<prefix>:<parts...>` (see the layout above). */
export function redisKey(prefix: string, ...parts: string[]): string {
  return [prefix, ...parts].join(":");
}

/**
 * Applies one transition. KEYS[1]: the run hash. ARGV: 1 prefix, 2 run id, 3 queue,
 * 4 expected version ("" for a new run), 5 record JSON, 6 status, 7 last seq, 8 createdAt,
 * 9 pending score (availableAt) or "", 10 running score (lease expiry) or "", 11 finishedAt or "",
 * 12 BullMQ job id to record or "", 13 op ("", step, input, checkpoint), 14 op key, 15 op value,
 * 16 idempotency key name or "", 17 fence, 18 attempt, 19 availableAt, 20 event count, then
 * (seq, event JSON) pairs. The record JSON is the whole record: a claim overlay is dropped.
 * Returns {1, version} when written, {0, version} on a version conflict, {-1} when the run is
 * gone, {2, value} when the step was committed before, {3, runId} when the idempotency key is
 * taken.
 */
export const COMMIT_LUA = `
local p, id, q = ARGV[1], ARGV[2], ARGV[3]
local rk = KEYS[1]
local v = redis.call('HGET', rk, 'v')
if ARGV[4] == '' then
  if ARGV[16] ~= '' then
    local other = redis.call('GET', ARGV[16])
    if other then return {3, other} end
  end
  if v then return {0, v} end
else
  if not v then return {-1} end
  if v ~= ARGV[4] then return {0, v} end
end
local op = ARGV[13]
if op == 'step' then
  local sk = p .. ':steps:' .. id
  local existing = redis.call('HGET', sk, ARGV[14])
  if existing then return {2, existing} end
  redis.call('HSET', sk, ARGV[14], ARGV[15])
elseif op == 'input' then
  redis.call('HSET', p .. ':in:' .. id, ARGV[14], ARGV[15])
elseif op == 'checkpoint' then
  redis.call('SET', p .. ':cp:' .. id, ARGV[15])
end
local status, created = ARGV[6], ARGV[8]
local old = redis.call('HGET', rk, 'status')
if old ~= status then
  if old then redis.call('ZREM', p .. ':st:' .. q .. ':' .. old, id) end
  redis.call('ZADD', p .. ':st:' .. q .. ':' .. status, created, id)
end
if not v then
  redis.call('ZADD', p .. ':list:' .. q, created, id)
  if ARGV[16] ~= '' then
    redis.call('SET', ARGV[16], id)
    redis.call('HSET', rk, 'idem', ARGV[16])
  end
end
local function index(key, score)
  if score == '' then redis.call('ZREM', key, id) else redis.call('ZADD', key, score, id) end
end
index(p .. ':pend:' .. q, ARGV[9])
index(p .. ':act:' .. q, ARGV[10])
index(p .. ':fin:' .. q, ARGV[11])
local nv = (tonumber(v) or 0) + 1
redis.call('HSET', rk, 'doc', ARGV[5], 'v', nv, 'status', status, 'seq', ARGV[7],
  'fence', ARGV[17], 'att', ARGV[18], 'avail', ARGV[19], 'ca', created)
redis.call('HDEL', rk, 'claim')
if ARGV[12] ~= '' then redis.call('HSET', rk, 'job', ARGV[12]) end
local n = tonumber(ARGV[20])
local ek = p .. ':ev:' .. id
for i = 0, n - 1 do
  redis.call('XADD', ek, ARGV[21 + 2 * i] .. '-0', 'e', ARGV[22 + 2 * i])
end
if n > 0 then redis.call('PUBLISH', ek, ARGV[7]) end
return {1, nv}
`;

/**
 * Claims a run in one call, in the common case only: its record exists, names the delivered job
 * (ARGV[4]), is pending and due at ARGV[7]. It then does what `claimRun` does to a pending run
 * (fence + 1, running, leased to worker ARGV[5] until ARGV[6], `run.started`) on the hash fields,
 * and records {w, at, exp} as `claim` rather than rewriting doc (readers apply it). KEYS[1]: the
 * run hash. ARGV: 1 prefix, 2 run id, 3 queue, 4 job id, 5 worker id, 6 lease expiry, 7 now.
 * Returns {1, version, doc, steps (flat), answers (flat), checkpoint or false}, or {0} for any
 * other case: the caller then reads the record and decides (claim.ts).
 */
export const CLAIM_LUA = `
local p, id, q, now = ARGV[1], ARGV[2], ARGV[3], ARGV[7]
local rk = KEYS[1]
local f = redis.call('HMGET', rk, 'v', 'job', 'status', 'avail', 'fence', 'att', 'seq', 'ca', 'doc')
if not f[1] or f[2] ~= ARGV[4] or f[3] ~= 'pending' or not (f[4] and f[5] and f[8]) then
  return {0}
end
if tonumber(f[4]) > tonumber(now) then return {0} end
local nv = tonumber(f[1]) + 1
local fence = tonumber(f[5]) + 1
local seq = tonumber(f[7]) + 1
local w = cjson.encode(ARGV[5])
redis.call('HSET', rk, 'v', nv, 'status', 'running', 'seq', seq, 'fence', fence,
  'claim', '{"w":' .. w .. ',"at":' .. now .. ',"exp":' .. ARGV[6] .. '}')
redis.call('ZREM', p .. ':st:' .. q .. ':pending', id)
redis.call('ZADD', p .. ':st:' .. q .. ':running', f[8], id)
redis.call('ZREM', p .. ':pend:' .. q, id)
redis.call('ZADD', p .. ':act:' .. q, ARGV[6], id)
local ek = p .. ':ev:' .. id
redis.call('XADD', ek, seq .. '-0', 'e', '{"type":"run.started","at":' .. now .. ',"attempt":' ..
  f[6] .. ',"data":{"fence":' .. fence .. ',"workerId":' .. w .. '}}')
redis.call('PUBLISH', ek, seq)
local cp = redis.call('GET', p .. ':cp:' .. id)
return {1, nv, f[9], redis.call('HGETALL', p .. ':steps:' .. id),
  redis.call('HGETALL', p .. ':in:' .. id), cp}
`;

/**
 * Deletes up to ARGV[4] finished runs of queue ARGV[2] that finished before ARGV[3], with their
 * history, steps, answers, checkpoint, index entries and idempotency key. ARGV[1]: prefix.
 * Returns how many.
 */
export const PRUNE_LUA = `
local p, q, before, limit = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4])
local ids = redis.call('ZRANGEBYSCORE', p .. ':fin:' .. q, '-inf', '(' .. before, 'LIMIT', 0, limit)
for _, id in ipairs(ids) do
  local rk = p .. ':run:' .. id
  local status = redis.call('HGET', rk, 'status')
  local idem = redis.call('HGET', rk, 'idem')
  if idem and redis.call('GET', idem) == id then redis.call('DEL', idem) end
  redis.call('DEL', rk, p .. ':ev:' .. id, p .. ':steps:' .. id, p .. ':in:' .. id, p .. ':cp:' .. id)
  redis.call('ZREM', p .. ':list:' .. q, id)
  redis.call('ZREM', p .. ':fin:' .. q, id)
  if status then redis.call('ZREM', p .. ':st:' .. q .. ':' .. status, id) end
  redis.call('PUBLISH', p .. ':ev:' .. id, '0')
end
return #ids
`;
