import { readSSEEvents, type SSEEvent } from "@nerva/core/testing";
import { describe, expect, it } from "vitest";
import type { StartedExampleApp } from "./example-app-suite.js";

/** The embedded service the shared suite runs: small limits, so that they can be reached. */
export const SUITE_ENV = {
  RATE_LIMIT_PER_MINUTE: "30",
  BUDGET_TOKENS_PER_DAY: "400",
  BUDGET_RESERVE_TOKENS: "60",
} as const;

type Answer = { status: number; headers: Headers; body: any }; // eslint-disable-line @typescript-eslint/no-explicit-any

/**
 * The example service's routes on a running app (embedded mode): the 429s of the rate limit and
 * the budget, an approval (403 for the requester and for a non-approver, 200 for an approver,
 * resumed once), and durable runs (202, their events as SSE with `Last-Event-ID`, cancel, 404
 * for another user).
 */
export function describeExampleService(
  app: () => StartedExampleApp,
  tokenFor: (user: string, roles?: string[]) => Promise<string>,
): void {
  const as = async (user: string, roles: string[] = []) => {
    const token = await tokenFor(user, roles);
    const call = async (method: string, path: string, body?: unknown): Promise<Answer> => {
      const res = await fetch(`${app().url}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${token}`,
          ...(body === undefined ? {} : { "content-type": "application/json" }),
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      return { status: res.status, headers: res.headers, body: await res.json() };
    };
    const events = async (id: string, lastEventId?: string) => {
      const res = await fetch(`${app().url}/runs/${id}/events`, {
        headers: {
          authorization: `Bearer ${token}`,
          ...(lastEventId === undefined ? {} : { "last-event-id": lastEventId }),
        },
      });
      expect(res.headers.get("content-type")).toMatch(/^text\/event-stream/);
      const seen: SSEEvent[] = [];
      for await (const e of readSSEEvents(res.body as AsyncIterable<Uint8Array>)) seen.push(e);
      return seen;
    };
    return {
      chat: (message: string) => call("POST", "/chat", { message }),
      post: (path: string, body: unknown) => call("POST", path, body),
      get: (path: string) => call("GET", path),
      events,
    };
  };

  describe("the service's policy, approvals and runs", () => {
    it("answers 429 RATE_LIMITED with retry-after past the rate limit", async () => {
      const user = await as("svc-rate");
      const statuses: number[] = [];
      let refused: Answer | undefined;
      for (let i = 0; i <= Number(SUITE_ENV.RATE_LIMIT_PER_MINUTE); i++) {
        const answer = await user.chat("echo hi");
        statuses.push(answer.status);
        if (answer.status === 429) refused = answer;
      }
      expect(statuses.filter((s) => s === 200)).toHaveLength(30);
      expect(refused?.body.error.code).toBe("RATE_LIMITED");
      expect(Number(refused?.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    });

    it("counts the model's tokens in usage.totalTokens and answers 429 BUDGET_EXCEEDED past the budget", async () => {
      const user = await as("svc-budget");
      let spent = 0;
      let last: Answer | undefined;
      for (let i = 0; i < 10; i++) {
        last = await user.chat("hello");
        if (last.status !== 200) break;
        expect(last.body.usage.totalTokens).toBeGreaterThan(0);
        spent += last.body.usage.totalTokens as number;
      }
      expect(last?.status).toBe(429);
      expect(last?.body.error.code).toBe("BUDGET_EXCEEDED");
      expect(spent).toBeGreaterThan(0);
      expect(spent).toBeLessThanOrEqual(400 + 60);
    });

    it("gates refunds behind an approver's approval, resumed once by the requester", async () => {
      const alice = await as("svc-alice");
      const asked = await alice.chat("refund order 42");
      expect(asked.status).toBe(202);
      expect(asked.body.error.code).toBe("APPROVAL_PENDING");
      const id = asked.body.error.details.approvalId as string;
      const decide = { decision: "approve" };
      expect((await alice.post(`/approvals/${id}`, decide)).status).toBe(403);
      expect((await (await as("svc-eve")).post(`/approvals/${id}`, decide)).status).toBe(403);
      expect((await alice.post("/chat/resume", { approvalId: id })).status).toBe(202); // pending
      const approver = await as("svc-bob", ["approver"]);
      expect(await approver.post(`/approvals/${id}`, decide)).toMatchObject({ status: 200 });
      const resumed = await alice.post("/chat/resume", { approvalId: id });
      expect(resumed.status).toBe(200);
      expect(resumed.body.handler).toBe("refund_agent");
      expect((await alice.post("/chat/resume", { approvalId: id })).status).toBe(409);
      expect((await alice.post(`/approvals/${id}`, { decision: "maybe" })).status).toBe(400);
    });

    it("runs a message as a durable run: events with ids, Last-Event-ID, cancel, 404 for others", async () => {
      const frank = await as("svc-frank");
      const started = await frank.post("/runs", { message: "count to 3" });
      expect(started.status).toBe(202);
      const id = started.body.id as string;
      expect((await (await as("svc-grace")).get(`/runs/${id}`)).status).toBe(404);
      const all = await frank.events(id);
      expect(all.map((e) => Number(e.id))).toEqual(all.map((_, i) => i + 1));
      expect(all.at(-1)?.event).toBe("run.succeeded");
      const after = await frank.events(id, all[2]?.id ?? "");
      expect(after.map((e) => e.id)).toEqual(all.slice(3).map((e) => e.id));
      expect((await frank.get(`/runs/${id}`)).body).toMatchObject({
        status: "succeeded",
        result: { output: "1 2 3" },
      });
      const long = await frank.post("/runs", { message: "count to 100" });
      const cancelled = await frank.post(`/runs/${long.body.id}/cancel`, {});
      expect(cancelled.status).toBe(200);
      const events = await frank.events(long.body.id as string);
      expect(events.at(-1)?.event).toBe("run.cancelled");
      expect((await frank.get("/runs/not%20an%20id")).status).toBe(400);
    });
  });
}
