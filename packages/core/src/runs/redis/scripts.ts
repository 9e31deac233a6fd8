// The Lua scripts of RedisRunStore. Each runs atomically in Redis: a transition of a run is
// written only if the record is still at the version the writer read (compare-and-set), so a
// worker whose lease was taken over (the record changed under it) never overwrites anything.
//
// Key layout under the store's prefix `p` (the scripts build the same names as redisKey):
//   p:run:<id>              hash: fix (JSON of the record's fields that never change, written
//                           once at creation), doc (JSON of the others; a record written before
//                           the split holds the whole record in doc and has no fix and no fx),
//                           fx ("1": fix is written), v (version), status, seq, pri, idem, the
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
//   p:pend:<queue>          zset of pending runs of priority 0 by availableAt: the queue itself
//   p:pdl:<queue>           zset of pending runs of priority > 0 not yet due, by availableAt
//   p:prq:<queue>           zset of due runs of priority > 0, by priority * 2^32 + the order they
//                           fell due (p:pseq:<queue> counts it); a claim moves them from pdl
//   p:act:<queue>           zset of running runs by lease expiry (a lapsed one is reclaimed)
//   p:fin:<queue>           zset of final runs by finishedAt
//   p:mark:<queue>          zset holding one member while there may be a run to claim: written
//                           with every pending run, popped by a waiting claim (BZPOPMIN)
//   p:cancel                channel of cancel requests (message: the run id)

/** The key `<prefix>:<parts...>` (see the layout above). */
export function redisKey(prefix: string, ...parts: string[]): string {
  return [prefix, ...parts].join(":");
}

/**
 * Applies one transition. KEYS[1]: the run hash. ARGV: 1 prefix, 2 run id, 3 queue,
 * 4 expected version ("" for a new run), 5 record JSON, 6 status, 7 last seq, 8 createdAt,
 * 9 pending score (availableAt) or "", 10 running score (lease expiry) or "", 11 finishedAt or "",
 * 12 priority, 13 op ("", step, input, checkpoint), 14 op key, 15 op value,
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
  h[#h + 1] = 'ca'; h[#h + 1] = ARGV[8]; h[#h + 1] = 'pri'; h[#h + 1] = ARGV[12]
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
-- A pending run is in the queue (pend for priority 0, else pdl until due, then prq), a running
-- one in act, a final one in fin (finishedAt is set then only): an index it cannot be in is not
-- touched. Every write of a pending run sets the queue's marker, which wakes a waiting claim.
local pri = tonumber(ARGV[12])
local function index(name, score, was)
  if score ~= '' then redis.call('ZADD', p .. ':' .. name .. ':' .. q, score, id)
  elseif was then redis.call('ZREM', p .. ':' .. name .. ':' .. q, id) end
end
if pri == 0 then
  index('pend', ARGV[9], old == 'pending')
else
  index('pdl', ARGV[9], old == 'pending')
  if old == 'pending' then
    redis.call('ZREM', p .. ':prq:' .. q, id)
    redis.call('ZREM', p .. ':pend:' .. q, id)
  end
end
if ARGV[9] ~= '' then redis.call('ZADD', p .. ':mark:' .. q, 0, '0') end
index('act', ARGV[10], old == 'running')
index('fin', ARGV[11], old == 'succeeded' or old == 'failed' or old == 'cancelled' or
  old == 'timed_out')
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
 * Takes the most urgent claimable run of queue ARGV[2] in one call. A running run whose lease
 * lapsed comes first and is answered {2, id}: the caller reclaims it (or fails it, past its
 * maxReclaims) by the read-and-write path, as it does a candidate this script does not claim
 * itself (a record written before the split). Else the first due run of priority 0 (pend by
 * availableAt), else the most urgent due run of priority > 0 (moved from pdl to prq as they fall
 * due). It then does what `claimRun` does to a pending run (fence + 1, running, leased to worker
 * ARGV[4] until ARGV[5], `run.started`) on the hash fields, records {w, at, exp} as `claim` rather
 * than rewriting doc (readers apply it), and sets the marker again when another run is due, so
 * that one more waiting claim wakes. ARGV: 1 prefix, 2 queue, 3 now, 4 worker id as JSON,
 * 5 lease expiry. Returns {1, id, version, doc, fix, steps (flat), answers (flat), checkpoint or
 * false} (only the first five when the run has none of those: nx), {2, id}, or {0, next} when
 * nothing is due: next is the earliest time one will be (a due time or a lease expiry), or ''.
 */
export const CLAIM_LUA = `
local p, q, now = ARGV[1], ARGV[2], ARGV[3]
local pend, pdl, prq, act = p .. ':pend:' .. q, p .. ':pdl:' .. q, p .. ':prq:' .. q, p .. ':act:' .. q
local lapsed = redis.call('ZRANGEBYSCORE', act, '-inf', now, 'LIMIT', 0, 1)[1]
if lapsed then return {2, lapsed} end
local from = pend
local due = redis.call('ZRANGEBYSCORE', pend, '-inf', now, 'LIMIT', 0, 2)
local id, more = due[1], due[2] ~= nil
if not id or not more then
  local fell = redis.call('ZRANGEBYSCORE', pdl, '-inf', now, 'LIMIT', 0, 100)
  if fell[1] then
    for _, r in ipairs(fell) do
      local n = redis.call('INCR', p .. ':pseq:' .. q) % 4294967296
      local rp = tonumber(redis.call('HGET', p .. ':run:' .. r, 'pri') or '1') or 1
      redis.call('ZADD', prq, rp * 4294967296 + n, r)
    end
    redis.call('ZREM', pdl, unpack(fell))
  end
  if id then
    more = redis.call('EXISTS', prq) == 1
  else
    local top = redis.call('ZRANGE', prq, 0, 1)
    id, more, from = top[1], top[2] ~= nil, prq
  end
end
if not id then
  local next = nil
  for _, k in ipairs({pend, pdl, act}) do
    local first = redis.call('ZRANGE', k, 0, 0, 'WITHSCORES')[2]
    if first and (next == nil or tonumber(first) < next) then next = tonumber(first) end
  end
  return {0, next and string.format('%.0f', next) or ''}
end
if more then redis.call('ZADD', p .. ':mark:' .. q, 0, '0') end
local rk = p .. ':run:' .. id
local f = redis.call('HMGET', rk, 'v', 'status', 'avail', 'fence', 'att', 'seq', 'ca', 'doc',
  'nx', 'fx', 'fix')
if not f[1] or f[2] ~= 'pending' or f[10] ~= '1' or not (f[3] and f[4] and f[7]) or
  tonumber(f[3]) > tonumber(now) then
  return {2, id}
end
local nv = tonumber(f[1]) + 1
local fence = tonumber(f[4]) + 1
local seq = tonumber(f[6]) + 1
local w = ARGV[4]
redis.call('HSET', rk, 'v', nv, 'status', 'running', 'seq', seq, 'fence', fence,
  'claim', '{"w":' .. w .. ',"at":' .. now .. ',"exp":' .. ARGV[5] .. '}',
  '#' .. seq, '{"type":"run.started","at":' .. now .. ',"attempt":' .. f[5] ..
  ',"data":{"fence":' .. fence .. ',"workerId":' .. w .. '}}')
redis.call('ZREM', p .. ':st:' .. q .. ':pending', id)
redis.call('ZADD', p .. ':st:' .. q .. ':running', f[7], id)
redis.call('ZREM', from, id)
redis.call('ZADD', act, ARGV[5], id)
redis.call('PUBLISH', p .. ':ev:' .. id, seq .. ':running')
-- A run written with nx = 1 has no steps, answers or checkpoint: three reads saved.
if f[9] == '1' then return {1, id, nv, f[8], f[11]} end
local cp = redis.call('GET', p .. ':cp:' .. id)
return {1, id, nv, f[8], f[11], redis.call('HGETALL', p .. ':steps:' .. id),
  redis.call('HGETALL', p .. ':in:' .. id), cp}
`;

/**
 * A finish and the claim that follows it, in one call: the commit script's transition (ARGV 6
 * onwards, as COMMIT_LUA's ARGV; KEYS[1] the run hash) and, when it was written, the claim
 * script (ARGV 1-5, as CLAIM_LUA's). Returns the commit's answer with the claim's as its third
 * element when the commit was written.
 */
export const COMMIT_CLAIM_LUA = `
local function commit(ARGV)
${COMMIT_LUA}
end
local function claim(ARGV)
${CLAIM_LUA}
end
local c, a = {}, {}
for i = 1, 5 do c[i] = ARGV[i] end
for i = 6, #ARGV do a[i - 5] = ARGV[i] end
local r = commit(a)
if r[1] == 1 then r[3] = claim(c) end
return r
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
