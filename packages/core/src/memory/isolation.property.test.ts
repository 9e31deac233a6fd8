import fc from "fast-check";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, it } from "vitest";
import { REDIS_URL, dropPrefixes, testPrefix } from "../runs/redis/redis.test-support.js";
import { ExecContext } from "../context/exec-context.js";
import type { Scope } from "../types/status.js";
import { InMemoryMemoryStore } from "./in-memory-store.js";
import { wordEmbedder } from "../testing/memory-contract.js";
import { RedisMemoryStore } from "./redis-memory-store.js";
import { SqliteMemoryStore } from "./sqlite-memory-store.js";
import { TieredMemory } from "./tiered-memory.js";
import type { MemoryStore } from "./types.js";

// Identities chosen to collide if a namespace were built by naive string concatenation.
const USERS = ["u", "u:s", "u%3As", "s"];
const SESSIONS = ["s", ":s", "s:", "u"];
const AGENTS = ["a", "a:u"];
const SCOPES: Scope[] = ["user", "session", "agent", "global"];

const op = fc.record({
  user: fc.constantFrom(...USERS),
  session: fc.constantFrom(...SESSIONS),
  agent: fc.constantFrom(...AGENTS),
  scope: fc.constantFrom(...SCOPES),
  kind: fc.constantFrom("turn", "fact", "episode"),
  key: fc.option(fc.constantFrom("k1", "k2"), { nil: undefined }),
});

function ctxFor(user: string, session: string, agent: string, scope: Scope): ExecContext {
  return ExecContext.create({ userId: user, sessionId: session, memoryScope: scope }).fork({
    agentName: agent,
  });
}

const dir = mkdtempSync(join(tmpdir(), "nerva-memory-prop-"));
const prefixes: string[] = [];
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  await dropPrefixes(prefixes);
});
let files = 0;

function redisStore(): MemoryStore {
  const prefix = testPrefix("isolation");
  prefixes.push(prefix);
  return new RedisMemoryStore({ url: REDIS_URL, prefix: `${prefix}:` });
}

const stores: [string, () => MemoryStore, number][] = [
  ["InMemoryMemoryStore", () => new InMemoryMemoryStore(), 150],
  ["SqliteMemoryStore", () => new SqliteMemoryStore({ path: join(dir, `p${++files}.db`) }), 30],
  ["RedisMemoryStore", redisStore, 150],
];

describe.each(stores)("memory isolation (%s)", (_label, makeStore, numRuns) => {
  it("never recalls one user's stores for another user outside global scope", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 30 }), async (ops) => {
        const memory = new TieredMemory({
          store: makeStore(),
          embed: wordEmbedder,
          hotTurns: 50,
          archiveTurns: true,
        });
        try {
          let i = 0;
          for (const o of ops) {
            await memory.store(
              {
                kind: o.kind as "turn" | "fact" | "episode",
                content: `owner=${o.user} #${i++} berlin`,
                ...(o.kind === "fact" && o.key !== undefined ? { key: o.key } : {}),
              },
              ctxFor(o.user, o.session, o.agent, o.scope),
            );
          }
          for (const user of USERS) {
            for (const session of SESSIONS) {
              for (const agent of AGENTS) {
                for (const scope of ["user", "session", "agent"] as const) {
                  const r = await memory.recall(
                    { text: "berlin", warmLimit: 1000, coldLimit: 100 },
                    ctxFor(user, session, agent, scope),
                  );
                  for (const item of [...r.hot, ...r.warm, ...r.cold.map((c) => c.item)]) {
                    if (!item.content.startsWith(`owner=${user} #`)) {
                      throw new Error(
                        `${scope} recall for user ${JSON.stringify(user)} returned "${item.content}"`,
                      );
                    }
                  }
                }
              }
            }
          }
        } finally {
          await memory.close();
        }
      }),
      { numRuns },
    );
  });
});
