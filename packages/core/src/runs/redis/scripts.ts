// The Lua scripts of RedisRunStore. Each runs atomically in Redis: a transition of a run is
// written only if the record is still at the version the writer read (compare-and-set), so a
// worker whose lease was taken over (the record changed under it) never overwrites anything.
//
// Key layout under the store's prefix `p` (the scripts build the same names as redisKey):
//   p:run:<id>              hash: fix (JSON of the record's fields that never change, written
//                           once at creation), doc (JSON of the others; a record written before
//                           the split holds the whole record in doc and has no fix and no fx),
//                           fx ("1": fix is written), v (version), status, seq, job, idem, the
//                           run's events as #<seq> (event JSON; one field each, never rewritten), and
//                           what the claim script needs without parsing doc: fence, att
//                           (attempt), avail (availableAt), ca (createdAt), nx ("1" while the
//                           run has no steps, answers or checkpoint); claim (JSON {w, at, exp},
//                           "" for none) when the claim script claimed the run after doc was
//                           written: readers apply it to doc (records.ts), the next commit folds it
//   p:ev:<id>               the channel that announces a run's new events and status changes
//                           (message: "<last seq>:<status>"; "0" when the run was pruned);
//                           runs written before events moved into the run hash hold them in a
//                           stream under this key, which readers still look at (READ_EVENTS_LUA)
//   p:steps:<id>            hash of committed steps; p:in:<id> hash of answers; p:cp:<id> checkpoint
//   p:idem:<queue>:<key>    the run id that took an idempotency key
//   p:st:<queue>:<status>   zset of the queue's runs of that status by createdAt (a list of all
//                           statuses merges them); runs written before that change are also in
//                           p:list:<queue>, which pruning still cleans
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
 * 16 idempotency key name or "", 17 fence, 18 attempt, 19 availableAt, 20 fixed fields JSON
 * or "" (sent at creation, and to a record written before the split), 21 event count, then
 * (seq, event JSON) pairs. ARGV[5] holds the fields that change (record-fields.ts): written, it
 * drops a claim overlay. Returns {1, version} when written, {0, version} on a version conflict,
 * {-1} when the run is gone, {2, value} when the step was committed before, {3, runId} when the
 * idempotency key is taken, {4} when the record has no fix yet and ARGV[20] is "" (send it).
 */
export const COMMIT_LUA = `
local p, id, q = ARGV[1], ARGV[2], ARGV[3]
local rk = KEYS[1]
-- One read for the compare-and-set and the index moves: the version and the old status.
local f = redis.call('HMGET', rk, 'v', 'status', 'fx')
local v, old = f[1], f[2]
local fix = ARGV[20]
if ARGV[4] == '' then
  if ARGV[16] ~= '' then
    local other = redis.call('GET', ARGV[16])
    if other then return {3, other} end
  end
  if v then return {0, v} end
else
  if not v then return {-1} end
  if v ~= ARGV[4] then return {0, v} end
  if f[3] ~= '1' and fix == '' then return {4} end
end
local op = ARGV[13]
local h = {'doc', ARGV[5], 'v', (tonumber(v) or 0) + 1, 'status', ARGV[6], 'seq', ARGV[7],
  'fence', ARGV[17], 'att', ARGV[18], 'avail', ARGV[19], 'claim', ''}
if fix ~= '' then
  h[#h + 1] = 'fix'; h[#h + 1] = fix; h[#h + 1] = 'fx'; h[#h + 1] = '1'
  h[#h + 1] = 'ca'; h[#h + 1] = ARGV[8]
end
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
-- nx = 1: the run has no steps, answers or checkpoint, so a claim need not read them.
if not v then
  h[#h + 1] = 'nx'; h[#h + 1] = op == '' and '1' or ''
elseif op ~= '' then
  h[#h + 1] = 'nx'; h[#h + 1] = ''
end
local status, created = ARGV[6], ARGV[8]
if old ~= status then
  if old then redis.call('ZREM', p .. ':st:' .. q .. ':' .. old, id) end
  redis.call('ZADD', p .. ':st:' .. q .. ':' .. status, created, id)
end
if not v then
  if ARGV[16] ~= '' then
    redis.call('SET', ARGV[16], id)
    h[#h + 1] = 'idem'; h[#h + 1] = ARGV[16]
  end
end
-- A run is in pend while pending, in act while running, in fin once final (finishedAt is set
-- then only): an index it cannot be in is not touched.
local function index(name, score, was)
  if score ~= '' then redis.call('ZADD', p .. ':' .. name .. ':' .. q, score, id)
  elseif was then redis.call('ZREM', p .. ':' .. name .. ':' .. q, id) end
end
index('pend', ARGV[9], old == 'pending')
index('act', ARGV[10], old == 'running')
index('fin', ARGV[11], old == 'succeeded' or old == 'failed' or old == 'cancelled' or
  old == 'timed_out')
if ARGV[12] ~= '' then h[#h + 1] = 'job'; h[#h + 1] = ARGV[12] end
-- The events are fields of the run hash ('#<seq>'), written by the same HSET as the record.
local n = tonumber(ARGV[21])
for i = 0, n - 1 do
  h[#h + 1] = '#' .. ARGV[22 + 2 * i]; h[#h + 1] = ARGV[23 + 2 * i]
end
redis.call('HSET', rk, unpack(h))
if n > 0 or old ~= status then
  redis.call('PUBLISH', p .. ':ev:' .. id, ARGV[7] .. ':' .. status)
end
return {1, h[4]}
`;

/**
 * Claims a run in one call, in the common case only: its record exists, names the delivered job
 * (ARGV[4]), is pending and due at ARGV[7]. It then does what `claimRun` does to a pending run
 * (fence + 1, running, leased to worker ARGV[5] until ARGV[6], `run.started`) on the hash fields,
 * and records {w, at, exp} as `claim` rather than rewriting doc (readers apply it). KEYS[1]: the
 * run hash. ARGV: 1 prefix, 2 run id, 3 queue, 4 job id, 5 worker id as JSON, 6 lease expiry,
 * 7 now. Returns {1, version, doc, fix, steps (flat), answers (flat), checkpoint or false}, or
 * just {1, version, doc, fix} when the run has none of those (nx), or {0} for any other case
 * (a record written before the split among them): the caller then reads the record and decides
 * (claim.ts).
 */
export const CLAIM_LUA = `
local p, id, q, now = ARGV[1], ARGV[2], ARGV[3], ARGV[7]
local rk = KEYS[1]
local f = redis.call('HMGET', rk, 'v', 'job', 'status', 'avail', 'fence', 'att', 'seq', 'ca', 'doc',
  'nx', 'fx', 'fix')
if not f[1] or f[2] ~= ARGV[4] or f[3] ~= 'pending' or f[11] ~= '1' or not (f[4] and f[5] and f[8])
then
  return {0}
end
if tonumber(f[4]) > tonumber(now) then return {0} end
local nv = tonumber(f[1]) + 1
local fence = tonumber(f[5]) + 1
local seq = tonumber(f[7]) + 1
local w = ARGV[5]
redis.call('HSET', rk, 'v', nv, 'status', 'running', 'seq', seq, 'fence', fence,
  'claim', '{"w":' .. w .. ',"at":' .. now .. ',"exp":' .. ARGV[6] .. '}',
  '#' .. seq, '{"type":"run.started","at":' .. now .. ',"attempt":' .. f[6] ..
  ',"data":{"fence":' .. fence .. ',"workerId":' .. w .. '}}')
redis.call('ZREM', p .. ':st:' .. q .. ':pending', id)
redis.call('ZADD', p .. ':st:' .. q .. ':running', f[8], id)
redis.call('ZREM', p .. ':pend:' .. q, id)
redis.call('ZADD', p .. ':act:' .. q, ARGV[6], id)
redis.call('PUBLISH', p .. ':ev:' .. id, seq .. ':running')
-- A run written with nx = 1 has no steps, answers or checkpoint: three reads saved.
if f[10] == '1' then return {1, nv, f[9], f[12]} end
local cp = redis.call('GET', p .. ':cp:' .. id)
return {1, nv, f[9], f[12], redis.call('HGETALL', p .. ':steps:' .. id),
  redis.call('HGETALL', p .. ':in:' .. id), cp}
`;

/**
 * Reads the events of a run after seq ARGV[1], at most ARGV[2] of them. KEYS[1]: the run hash,
 * KEYS[2]: the run's old event stream (see the layout). Returns the event JSONs in seq order from
 * ARGV[1] + 1; a gap (none is ever written) ends the answer early.
 */
export const READ_EVENTS_LUA = `
local rk, after = KEYS[1], tonumber(ARGV[1])
local last = math.min(tonumber(redis.call('HGET', rk, 'seq') or '0'), after + tonumber(ARGV[2]))
local out = {}
local s = after + 1
while s <= last do
  -- Fields in batches: unpack has a stack limit.
  local fields = {}
  for i = s, math.min(last, s + 499) do fields[#fields + 1] = '#' .. i end
  local vals = redis.call('HMGET', rk, unpack(fields))
  for i = 1, #vals do
    local e = vals[i]
    if not e then
      local old = redis.call('XRANGE', KEYS[2], s .. '-0', s .. '-0')
      if not old[1] then return out end
      e = old[1][2][2]
    end
    out[#out + 1] = e
    s = s + 1
  end
end
return out
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
