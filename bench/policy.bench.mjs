// Cost of a policy check with its rate limits and budgets in memory (InMemoryLimitStore, the
// default) against the same engine on Redis (RedisLimitStore at REDIS_URL, default
// 127.0.0.1:6379), in the same run, one fresh ExecContext per request:
// - route: `before_route` with one `per: user` rate limit (one window);
// - action: `before_invoke` of an agent with a `per: user` budget, a `per: handler` and a
//   `per: user_handler` limit (one ledger and two windows, admitted and held atomically);
// - charge: the settlement at the end of the request (the hold released, real usage charged).
// Also, for Redis: a bare PING on the same connection (one round trip, the floor of any check),
// the scripts Redis ran per check (INFO commandstats: the target is one), and checks per second
// with 64 requests in flight. Keys live under a fresh prefix and are deleted at the end.
// Run: pnpm --filter @nerva/core build && node --expose-gc bench/policy.bench.mjs
import { randomBytes } from "node:crypto";
import { Redis } from "ioredis";
import { ExecContext } from "@nerva/core";
import { DeclarativePolicyEngine } from "@nerva/core/policy";
import { RedisLimitStore } from "@nerva/core/redis";

const url = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";
const prefix = `nerva-bench:${randomBytes(4).toString("hex")}:`;
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const doc = {
  version: 1,
  rateLimits: [
    { name: "per-user", per: "user", limit: 1e9, windowSeconds: 60 },
    { name: "agents", per: "handler", limit: 1e9, windowSeconds: 60 },
    { name: "mine", per: "user_handler", limit: 1e9, windowSeconds: 60 },
  ],
  budgets: [{ name: "daily", per: "user", maxTokens: 1e12, reserveTokens: 100 }],
};
const route = { checkpoint: "before_route", message: "hi" };
const action = { checkpoint: "before_invoke", kind: "agent", name: "a" };
const usage = { promptTokens: 10, completionTokens: 5, totalTokens: 15, costUsd: 0 };

/** ns per route check, per action check and per charge: medians of `rounds` rounds of `n`. */
async function measure(policy, n, rounds = 7) {
  let user = 0;
  const one = async (t) => {
    const ctx = ExecContext.create({ userId: `u${user++ % 1000}` });
    let a = process.hrtime.bigint();
    const r = await policy.evaluate(route, ctx);
    let b = process.hrtime.bigint();
    t.route += Number(b - a);
    a = b;
    const d = await policy.evaluate(action, ctx);
    b = process.hrtime.bigint();
    t.action += Number(b - a);
    a = b;
    await policy.charge(usage, ctx);
    t.charge += Number(process.hrtime.bigint() - a);
    ctx.dispose();
    if (r.effect !== "allow" || d.effect !== "allow") throw new Error(`refused: ${d.reason}`);
  };
  const warm = { route: 0, action: 0, charge: 0 };
  for (let i = 0; i < n; i++) await one(warm);
  const per = { route: [], action: [], charge: [] };
  for (let r = 0; r < rounds; r++) {
    const t = { route: 0, action: 0, charge: 0 };
    for (let i = 0; i < n; i++) await one(t);
    for (const k of Object.keys(per)) per[k].push(t[k] / n);
  }
  return { route: median(per.route), action: median(per.action), charge: median(per.charge) };
}

const memory = new DeclarativePolicyEngine(doc);
const client = new Redis(url);
const limits = new RedisLimitStore({ client, prefix });
const redis = new DeclarativePolicyEngine(doc, { limits });

const inMemory = await measure(memory, 20_000);
const onRedis = await measure(redis, 3_000);

const pings = [];
for (let r = 0; r < 7; r++) {
  const t = process.hrtime.bigint();
  for (let i = 0; i < 3_000; i++) await client.ping();
  pings.push(Number(process.hrtime.bigint() - t) / 3_000);
}
const ping = median(pings);

const scripts = async () => {
  let n = 0;
  for (const m of (await client.info("commandstats")).matchAll(
    /cmdstat_(evalsha|eval):calls=(\d+)/g,
  ))
    n += Number(m[2]);
  return n;
};
const before = await scripts();
const checks = 1_000;
for (let i = 0; i < checks / 2; i++) {
  const ctx = ExecContext.create({ userId: `r${i}` });
  await redis.evaluate(route, ctx);
  await redis.evaluate(action, ctx);
}
const scriptsPerCheck = ((await scripts()) - before) / checks;

// 64 requests in flight (ioredis pipelines what is sent while earlier answers are pending).
const inFlight = 64;
const total = 20_000;
let next = 0;
const started = process.hrtime.bigint();
await Promise.all(
  Array.from({ length: inFlight }, async () => {
    while (next < total) {
      const ctx = ExecContext.create({ userId: `c${next++ % 1000}` });
      await redis.evaluate(action, ctx);
    }
  }),
);
const concurrentPerS = Math.round(total / (Number(process.hrtime.bigint() - started) / 1e9));

let cursor = "0";
do {
  const [nextCursor, keys] = await client.scan(cursor, "MATCH", `${prefix}*`, "COUNT", 1000);
  cursor = nextCursor;
  if (keys.length > 0) await client.del(...keys);
} while (cursor !== "0");
await limits.close();
await client.quit();

const us = (ns) => Math.round(ns / 10) / 100;
console.log(
  JSON.stringify({
    bench: "policy",
    memory_route_us: us(inMemory.route),
    memory_action_us: us(inMemory.action),
    memory_charge_us: us(inMemory.charge),
    redis_route_us: us(onRedis.route),
    redis_action_us: us(onRedis.action),
    redis_charge_us: us(onRedis.charge),
    redis_ping_us: us(ping),
    redis_action_over_ping: Math.round((onRedis.action / ping) * 100) / 100,
    redis_scripts_per_check: scriptsPerCheck,
    redis_action_checks_per_s_64_in_flight: concurrentPerS,
  }),
);
