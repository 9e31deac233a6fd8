import { mkdtempSync, rmSync } from "node:fs";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { GraphHost } from "@nerva/core";
import { readSSEEvents } from "@nerva/core/testing";
import { refundDeskApp } from "./app.js";
import { refundDeskHost } from "./host.js";

const dir = mkdtempSync(join(tmpdir(), "refund-desk-"));
let host: GraphHost;
let stopHost: () => Promise<void>;
let url: string;
let close: () => void;

beforeAll(async () => {
  ({ host, close: stopHost } = refundDeskHost(join(dir, "runs.db")));
  await host.start();
  const server = refundDeskApp(host).listen(0, "127.0.0.1");
  await new Promise((r) => server.once("listening", r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  close = () => server.close();
});
afterAll(async () => {
  close();
  await stopHost();
  rmSync(dir, { recursive: true, force: true });
});

const post = (path: string, body: unknown) =>
  fetch(url + path, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });

describe("refund desk over HTTP", () => {
  it("triggers, streams events by SSE, takes the approval, and completes", async () => {
    const created = await post("/refunds", { orderId: "42" });
    expect(created.status).toBe(202);
    const { runId } = (await created.json()) as { runId: string };
    const seen: { event: string; id: string | null }[] = [];
    const res = await fetch(`${url}/refunds/${runId}/events`);
    for await (const e of readSSEEvents(res.body!)) {
      seen.push({ event: e.event, id: e.id });
      if (e.event === "run.paused") {
        expect(JSON.parse(e.data).data.prompt).toBe(
          "Refund 129.9 for order 42? (approved/declined)",
        );
        expect((await post(`/refunds/${runId}/input`, { value: "perhaps" })).status).toBe(400);
        expect((await post(`/refunds/${runId}/input`, { value: "approved" })).status).toBe(200);
        // Answered once: the run no longer waits.
        expect((await post(`/refunds/${runId}/input`, { value: "approved" })).status).toBe(409);
      }
    }
    expect(seen.map((e) => e.event)).toContain("output.delta");
    expect(seen.at(-1)?.event).toBe("run.succeeded");
    const done = (await (await fetch(`${url}/refunds/${runId}`)).json()) as {
      status: string;
      output: string;
    };
    expect(done).toMatchObject({ status: "succeeded", output: "refunded 129.9 on order 42" });
    // Reconnecting with Last-Event-ID replays only what came after it.
    const last = Number(seen[seen.length - 3]?.id);
    const again = await fetch(`${url}/refunds/${runId}/events`, {
      headers: { "last-event-id": String(last) },
    });
    const replay: number[] = [];
    for await (const e of readSSEEvents(again.body!)) replay.push(Number(e.id));
    expect(replay).toEqual(seen.slice(-2).map((e) => Number(e.id)));
  });

  it("pauses on a missing order id (needs_data) and answers unknown runs with 404", async () => {
    const { runId } = (await (await post("/refunds", {})).json()) as { runId: string };
    const paused = await host.wait(runId, { timeoutSeconds: 10 });
    expect(paused).toMatchObject({
      status: "paused",
      pausedAt: "intake",
      pause: { kind: "needs_data", prompt: "Which order?" },
    });
    expect(
      (await post(`/refunds/${runId}/input`, { value: { args: { orderId: "7" } } })).status,
    ).toBe(200);
    const review = await host.wait(runId, { timeoutSeconds: 10 });
    expect(review).toMatchObject({
      status: "paused",
      pausedAt: "review",
      state: { orderId: "7", total: 15 },
    });
    expect((await fetch(`${url}/refunds/run_nope`)).status).toBe(404);
    expect((await fetch(`${url}/refunds/run_nope/events`)).status).toBe(404);
    const bad = await fetch(`${url}/refunds/${runId}/events`, {
      headers: { "last-event-id": "-1" },
    });
    expect(bad.status).toBe(400); // never read as 0: that would replay every event again
  });
});
