// Three replicas of the built Express example on one Redis behind a round-robin proxy: every
// piece of state is shared, so the service behaves as one, whichever replica answers. Then one
// replica without REDIS_URL: the embedded defaults.
import { randomBytes } from "node:crypto";
import { readSSEEvents } from "@nerva/core/testing";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  clientOf,
  startProxy,
  startReplica,
  stopReplica,
  tokenFor,
  waitFor,
  type Replica,
} from "./replicas.test-support.js";

const REDIS_URL = process.env.NERVA_REDIS_URL ?? "redis://127.0.0.1:6379";
const PREFIX = `nerva-test:apps:${randomBytes(4).toString("hex")}`;
const RATE = 6;
const BUDGET = 150;
const RESERVE = 60;
const ENV = {
  REDIS_URL,
  NERVA_REDIS_PREFIX: PREFIX,
  PORT: "0",
  JWT_SECRET: "replicas-test-secret",
  RATE_LIMIT_PER_MINUTE: String(RATE),
  BUDGET_TOKENS_PER_DAY: String(BUDGET),
  BUDGET_RESERVE_TOKENS: String(RESERVE),
  RUNS_LEASE_SECONDS: "2",
};

describe("the Express example on three replicas, one Redis, a round-robin proxy", () => {
  let replicas: Replica[] = [];
  let proxy: Awaited<ReturnType<typeof startProxy>>;
  const as = async (user: string, roles: string[] = []) =>
    clientOf(proxy.url, await tokenFor(proxy.url, user, roles));

  beforeAll(async () => {
    replicas = await Promise.all([startReplica(ENV), startReplica(ENV), startReplica(ENV)]);
    proxy = await startProxy(replicas);
  });
  afterAll(async () => {
    await proxy?.close();
    await Promise.all(replicas.map((r) => stopReplica(r)));
    const redis = new Redis(REDIS_URL);
    const keys = await redis.keys(`${PREFIX}:*`);
    if (keys.length > 0) await redis.del(...keys);
    redis.disconnect();
  });

  it("holds the per-user rate limit for the replicas together", async () => {
    const user = await as("rate-user");
    // One after the other, so that no request waits on another's budget hold (echo spends no
    // tokens, but a request in flight holds BUDGET_RESERVE_TOKENS until it ends).
    const answers = [];
    for (let i = 0; i < RATE + 3; i++) answers.push(await user.chat("echo ping"));
    expect(answers.filter((a) => a.status === 200)).toHaveLength(RATE);
    const refused = answers.filter((a) => a.status === 429);
    expect(refused).toHaveLength(3);
    for (const r of refused) {
      expect(r.body.error.code).toBe("RATE_LIMITED");
      expect(Number(r.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    }
    // The burst was spread: every replica answered some of it.
    expect(new Set(proxy.served.slice(-answers.length - 1))).toEqual(new Set([0, 1, 2]));
  });

  it("spends at most the budget plus one hold on a burst spread over the replicas", async () => {
    const user = await as("budget-user");
    // The concierge (a model agent) spends about 58 tokens on "hello": 6 of them would be ~350.
    const answers = await Promise.all(Array.from({ length: RATE }, () => user.chat("hello")));
    const passed = answers.filter((a) => a.status === 200);
    const spent = passed.reduce((sum, a) => sum + (a.body.usage.totalTokens as number), 0);
    expect(passed.length).toBeGreaterThanOrEqual(1);
    for (const a of passed) expect(a.body.usage.totalTokens).toBeGreaterThan(0);
    expect(spent).toBeLessThanOrEqual(BUDGET + RESERVE);
    const refused = answers.filter((a) => a.status !== 200);
    expect(refused.length).toBeGreaterThanOrEqual(1);
    for (const r of refused) {
      expect(r.status).toBe(429);
      expect(r.body.error.code).toBe("BUDGET_EXCEEDED");
    }
  });

  it("takes an approval through one replica and resumes it through another, once", async () => {
    const alice = await as("refund-alice");
    const bob = await as("refund-bob", ["approver"]);
    const eve = await as("refund-eve");
    const asked = await alice.chat("refund order 7", 0);
    expect(asked.status).toBe(202);
    expect(asked.body.error.code).toBe("APPROVAL_PENDING");
    const approvalId = asked.body.error.details.approvalId as string;
    const decide = (c: typeof alice, replica: number) =>
      c.post(`/approvals/${approvalId}`, { decision: "approve" }, replica);
    expect((await decide(alice, 1)).status).toBe(403); // the requester
    expect((await decide(eve, 2)).status).toBe(403); // not an approver
    expect(await decide(bob, 1)).toMatchObject({ status: 200, body: { decision: "approve" } });
    const resumed = await alice.post("/chat/resume", { approvalId }, 2);
    expect(resumed.status).toBe(200);
    expect(resumed.body.text).toContain('Refund issued for refund-alice: "refund order 7"');
    const again = await alice.post("/chat/resume", { approvalId }, 0);
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe("INVALID_STATE");
  });

  it("keeps a session's memory whichever replica answers", async () => {
    const carol = await as("memory-carol");
    expect((await carol.chat("echo my favourite colour is green", 0)).status).toBe(200);
    for (const replica of [1, 2]) {
      const recalled = await carol.chat("what did I say earlier?", replica);
      expect(recalled.body.text).toContain('"echo my favourite colour is green"');
    }
    const dave = await as("memory-dave");
    expect((await dave.chat("what did I say earlier?", 1)).body.text).toBe(
      "You have not told me anything yet in this session.",
    );
  });

  it("streams a run's events through another replica and resumes after a cut", async () => {
    const frank = await as("runs-frank");
    const started = await frank.post("/runs", { message: "count to 10" }, 0);
    expect(started.status).toBe(202);
    const id = started.body.id as string;
    expect((await (await as("runs-grace")).get(`/runs/${id}`, 1)).status).toBe(404);
    // Through replica 1, until the proxy cuts the connection after the third number.
    const first = await frank.events(id, {
      replica: 1,
      stop: (seen) => {
        if (seen.filter((e) => e.event === "output.delta").length === 3) proxy.cut();
        return false;
      },
    });
    expect(first.filter((e) => e.event === "output.delta")).toHaveLength(3);
    const rest = await frank.events(id, { replica: 2, lastEventId: first.at(-1)?.id ?? "" });
    const all = [...first, ...rest];
    expect(all.map((e) => Number(e.id))).toEqual(all.map((_, i) => i + 1));
    const numbers = all
      .filter((e) => e.event === "output.delta")
      .map((e) => (JSON.parse(e.data) as { data: { chunk: string } }).data.chunk.trim());
    expect(numbers).toEqual(["1", "2", "3", "4", "5", "6", "7", "8", "9", "10"]);
    expect(all.at(-1)?.event).toBe("run.succeeded");
    const run = await frank.get(`/runs/${id}`, 2);
    expect(run.body).toMatchObject({
      status: "succeeded",
      result: { output: "1 2 3 4 5 6 7 8 9 10" },
    });
  });

  it("stops the work on one replica within 100 ms of a cancel through another", async () => {
    const heidi = await as("cancel-heidi");
    const { body } = await heidi.post("/runs", { message: "count to 100" });
    const id = body.id as string;
    const worker = await workerOf(id);
    await new Promise((r) => setTimeout(r, 300));
    const other = (worker + 1) % replicas.length;
    const cancelledAt = Date.now();
    expect((await heidi.post(`/runs/${id}/cancel`, {}, other)).status).toBe(200);
    const aborted = await waitFor("the handler's abort", () =>
      (replicas[worker] as Replica).logs.find(
        (l) => l.event === "count_agent.aborted" && l.runId === id,
      ),
    );
    const elapsedMs = (aborted.at as number) - cancelledAt;
    console.log(`cancel through replica ${other} → signal on replica ${worker}: ${elapsedMs} ms`);
    expect(elapsedMs).toBeLessThanOrEqual(100);
    // The run ends cancelled once its handler unwound.
    expect((await heidi.events(id, {})).at(-1)?.event).toBe("run.cancelled");
    expect((await heidi.get(`/runs/${id}`)).body.status).toBe("cancelled");
  });

  it("resumes a /api/chat answer through another replica and stops one through a third", async () => {
    const token = await tokenFor(proxy.url, "chat-judy");
    const headers = (replica: number) => ({
      authorization: `Bearer ${token}`,
      "content-type": "application/json",
      "x-replica": String(replica),
    });
    // What DefaultChatTransport posts and reads (the UI message stream: JSON chunks over SSE).
    const ask = (chatId: string, text: string, replica: number) =>
      fetch(`${proxy.url}/api/chat`, {
        method: "POST",
        headers: headers(replica),
        body: JSON.stringify({
          id: chatId,
          messages: [{ id: `u-${chatId}`, role: "user", parts: [{ type: "text", text }] }],
          trigger: "submit-message",
        }),
      });
    const chunksOf = async (res: Response, stop?: (seen: Chunk[]) => boolean) => {
      const seen: Chunk[] = [];
      for await (const e of readSSEEvents(res.body as AsyncIterable<Uint8Array>)) {
        if (e.data === "[DONE]") break;
        seen.push(JSON.parse(e.data) as Chunk);
        if (stop?.(seen) === true) break; // the reader leaves, as a closed tab does
      }
      return seen;
    };
    type Chunk = { type: string; delta?: string; messageId?: string; messageMetadata?: any }; // eslint-disable-line @typescript-eslint/no-explicit-any -- test JSON
    const deltas = (chunks: Chunk[]) => chunks.filter((c) => c.type === "text-delta").length;
    const text = (chunks: Chunk[]) => chunks.map((c) => c.delta ?? "").join("");

    const left = await chunksOf(await ask("judy-1", "count to 6", 0), (s) => deltas(s) === 2);
    expect(text(left)).toBe("1 2 ");
    const resumed = await fetch(`${proxy.url}/api/chat/judy-1/stream`, { headers: headers(1) });
    expect(resumed.status).toBe(200);
    // The whole answer again from its first event (what the transport expects of a resume).
    const whole = await chunksOf(resumed);
    expect(text(whole)).toBe("1 2 3 4 5 6 ");
    expect(whole.at(-1)).toMatchObject({
      type: "finish",
      messageMetadata: { status: "succeeded" },
    });
    expect(
      (await fetch(`${proxy.url}/api/chat/judy-1/stream`, { headers: headers(2) })).status,
    ).toBe(204);

    const long = await chunksOf(await ask("judy-2", "count to 100", 0), (s) => deltas(s) === 1);
    const runId = long.find((c) => c.type === "start")?.messageId as string;
    const stopped = await fetch(`${proxy.url}/api/chat/judy-2/stop`, {
      method: "POST",
      headers: headers(2),
    });
    expect(stopped.status).toBe(200);
    const judy = clientOf(proxy.url, token);
    expect((await judy.events(runId, { replica: 1 })).at(-1)?.event).toBe("run.cancelled");
  });

  it("finishes a run on another replica when its worker is SIGKILLed, no number twice", async () => {
    const ivan = await as("kill-ivan");
    const { body } = await ivan.post("/runs", { message: "count to 30" });
    const id = body.id as string;
    const worker = await workerOf(id);
    await new Promise((r) => setTimeout(r, 800));
    await stopReplica(replicas[worker] as Replica, "SIGKILL");
    const survivor = replicas.findIndex((r) => r.alive);
    const events = await ivan.events(id, { replica: survivor });
    expect(events.at(-1)?.event).toBe("run.succeeded");
    expect(events.some((e) => e.event === "run.reclaimed")).toBe(true);
    const committed = events
      .filter((e) => e.event === "step.completed")
      .map((e) => (JSON.parse(e.data) as { data: { key: string } }).data.key);
    // The run's admission into the per-user rate limit is committed once, by the first worker:
    // the survivor, executing the run again, did not count it again.
    expect(committed).toEqual([
      "$rate/per-user:user:kill-ivan",
      ...Array.from({ length: 30 }, (_, i) => `count-${i + 1}`),
    ]);
    const streamed = events
      .filter((e) => e.event === "output.delta")
      .map((e) => (JSON.parse(e.data) as { data: { chunk: string } }).data.chunk);
    expect(new Set(streamed).size).toBe(streamed.length);
    const run = await ivan.get(`/runs/${id}`, survivor);
    expect(run.body.result.output).toBe(Array.from({ length: 30 }, (_, i) => i + 1).join(" "));
  });

  /** The replica whose count_agent started run `id`. */
  const workerOf = (id: string) =>
    waitFor("the replica counting", () => {
      const i = replicas.findIndex((r) =>
        r.logs.some((l) => l.event === "count_agent.started" && l.runId === id),
      );
      return i >= 0 ? i : undefined;
    });
});

describe("the Express example with no REDIS_URL", () => {
  it("keeps working on its embedded defaults (a chat, a run)", async () => {
    const replica = await startReplica({ PORT: "0", RATE_LIMIT_PER_MINUTE: "3" });
    try {
      const user = clientOf(replica.url, await tokenFor(replica.url, "solo"));
      expect((await user.chat("echo hi")).body.text).toBe("solo, you said: echo hi");
      const { body } = await user.post("/runs", { message: "count to 3" });
      const events = await user.events(body.id as string, {});
      expect(events.at(-1)?.event).toBe("run.succeeded");
      expect((await user.get(`/runs/${body.id}`)).body.result.output).toBe("1 2 3");
      // Its own in-process limit of 3 a minute; the run was handled like a chat and counted.
      const more = [await user.chat("echo 3"), await user.chat("echo 4")];
      expect(more.map((a) => a.status)).toEqual([200, 429]);
    } finally {
      await stopReplica(replica);
    }
  });
});
