// What RedisMemoryStore and RedisRegistry do with their connection, against real redis-server
// processes of this file's own: a stopped server, a server that does not answer, recovery, a
// borrowed client, closing, and a missing ioredis.
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ExecContext } from "../context/exec-context.js";
import { ErrorCode, NervaError } from "../errors.js";
import { RedisMemoryStore } from "../memory/redis-memory-store.js";
import { TieredMemory } from "../memory/tiered-memory.js";
import { RedisRegistry } from "../registry/redis-registry.js";
import { RedisServerProcess } from "./redis-server.test-support.js";

const ctx = () => ExecContext.create({ userId: "u1", sessionId: "s1" });

/** One primitive behind a uniform pair of calls: a write and a read that returns what was written. */
interface Subject {
  write(tag: string): Promise<unknown>;
  read(): Promise<string[]>;
  close(): Promise<void>;
}

type Options = { url?: string; client?: Redis; timeoutSeconds?: number; prefix?: string };

const SUBJECTS: [string, (o: Options) => Subject][] = [
  [
    "RedisMemoryStore",
    (o) => {
      const memory = new TieredMemory({ store: new RedisMemoryStore(o) });
      return {
        write: (tag) => memory.store({ content: tag }, ctx()),
        read: async () => (await memory.recall("", ctx())).hot.map((t) => t.content),
        close: () => memory.close(),
      };
    },
  ],
  [
    "RedisRegistry",
    (o) => {
      const registry = new RedisRegistry(o);
      return {
        write: (tag) => registry.register({ kind: "tool", name: tag }, ctx()),
        read: async () => (await registry.discover(ctx())).map((e) => e.name),
        close: () => registry.close(),
      };
    },
  ],
];

async function unavailable(promise: Promise<unknown>): Promise<{ err: NervaError; ms: number }> {
  const started = Date.now();
  const err = await promise.then(
    () => {
      throw new Error("expected UNAVAILABLE, the call succeeded");
    },
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(NervaError);
  expect((err as NervaError).code).toBe(ErrorCode.UNAVAILABLE);
  return { err: err as NervaError, ms: Date.now() - started };
}

/** Retries `fn` until it succeeds, for up to `seconds`. */
async function eventually<T>(fn: () => Promise<T>, seconds: number): Promise<T> {
  const until = Date.now() + seconds * 1000;
  for (;;) {
    try {
      return await fn();
    } catch (err) {
      if (Date.now() > until) throw err;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

let server: RedisServerProcess;
beforeAll(async () => {
  server = await RedisServerProcess.start();
});
afterAll(() => server.stop());

describe.each(SUBJECTS)("%s and its connection", (_name, make) => {
  it("rejects UNAVAILABLE within timeoutSeconds while Redis is down, and recovers by itself", async () => {
    const subject = make({ url: server.url, timeoutSeconds: 1 });
    try {
      await subject.write("before");
      await server.stop();
      const write = await unavailable(subject.write("during"));
      expect(write.ms).toBeLessThan(2_500);
      // The message is for clients: no address, no client library text (that is the cause).
      expect(write.err.message).not.toMatch(/127\.0\.0\.1|ECONNREFUSED|ioredis/);
      expect(write.err.details).toMatchObject({ retryAfterSeconds: 1 });
      await unavailable(subject.read());
      await server.restart();
      // A fresh server (no persistence): what was written before is gone, new writes land.
      await eventually(() => subject.write("after"), 10);
      expect(await subject.read()).toEqual(["after"]);
    } finally {
      await subject.close();
      await server.restart().catch(() => undefined);
    }
  });

  it("rejects UNAVAILABLE when a connected server does not answer in time (CLIENT PAUSE)", async () => {
    const subject = make({ url: server.url, timeoutSeconds: 0.5 });
    const admin = new Redis(server.url);
    try {
      await subject.write("x");
      await admin.call("CLIENT", "PAUSE", "1500", "ALL");
      const { ms } = await unavailable(subject.read());
      expect(ms).toBeLessThan(1_400);
      await eventually(() => subject.read(), 5);
    } finally {
      await subject.close();
      await admin.flushall();
      admin.disconnect();
    }
  });

  it("bounds the wait on a borrowed client too, which keeps its own retry settings", async () => {
    // ioredis defaults: offline queue on, 20 retries per request. The store still answers in time.
    const client = new Redis(server.url);
    client.on("error", () => undefined);
    const subject = make({ client, timeoutSeconds: 1 });
    try {
      await subject.write("before");
      await server.stop();
      const { ms } = await unavailable(subject.write("during"));
      expect(ms).toBeLessThan(2_500);
      await server.restart();
      await eventually(() => subject.write("after"), 10);
      expect(await subject.read()).toContain("after");
    } finally {
      await subject.close();
      await server.restart().catch(() => undefined);
      client.disconnect();
    }
  });

  it("closes only the client it opened itself", async () => {
    const admin = new Redis(server.url);
    const clients = async () =>
      String(await admin.call("CLIENT", "LIST"))
        .trim()
        .split("\n").length;
    try {
      const alone = await clients();
      const own = make({ url: server.url });
      await own.write("own");
      expect(await clients()).toBe(alone + 1);
      await own.close();
      await eventually(async () => expect(await clients()).toBe(alone), 5);
      await expect(own.read()).rejects.toThrow(/closed/);

      const borrowed = new Redis(server.url);
      const lent = make({ client: borrowed });
      await lent.write("lent");
      await lent.close();
      expect(await borrowed.ping()).toBe("PONG");
      borrowed.disconnect();
    } finally {
      await admin.flushall();
      admin.disconnect();
    }
  });

  it("throws MISSING_DEPENDENCY naming ioredis when it is not installed", async () => {
    const hook = fileURLToPath(
      new URL("../../test/fixtures/hide-required-packages.mjs", import.meta.url),
    );
    const entry = fileURLToPath(new URL("../redis/index.ts", import.meta.url));
    const script = `
      import * as redis from ${JSON.stringify(entry)};
      try { new redis[${JSON.stringify(_name)}](); console.log("constructed?!"); }
      catch (e) { console.log(JSON.stringify({ code: e.code, message: e.message, details: e.details })); }`;
    const out = await new Promise<string>((resolve, reject) =>
      execFile(
        process.execPath,
        ["--import", hook, "--import", "tsx", "--input-type=module", "-e", script],
        { env: { ...process.env, NERVA_HIDE_PACKAGES: "ioredis" }, timeout: 30_000 },
        (err, stdout, stderr) =>
          err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(stdout),
      ),
    );
    const reported = JSON.parse(out.trim()) as { code: string; message: string; details: unknown };
    expect(reported.code).toBe("MISSING_DEPENDENCY");
    expect(reported.message).toContain(`${_name} needs the optional package "ioredis"`);
    expect(reported.details).toMatchObject({ package: "ioredis" });
  });
});
