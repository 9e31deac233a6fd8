/// <reference lib="dom" />
// The trace viewer in real headless Chromium (Debian's chromium, driven by playwright-core), over
// the Express example app with the viewer mounted as main.ts does with NERVA_TRACE_UI=1 (plus a
// per-user meter, and the concierge on the priced scripted model): real requests (a tool call, a
// delegation, a model call with tokens and cost, a failing request), then the page. Saves the
// screenshot docs/trace-viewer.png when NERVA_SCREENSHOTS=1 (else to a temp folder).
import { once } from "node:events";
import { mkdtempSync } from "node:fs";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { launchChromium, type Browser, type Page } from "@nerva/test-chromium";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ExecContext } from "@nerva/core";
import { type Span } from "@nerva/core/context";
import { type TraceDetail, type TraceSink } from "@nerva/core/tracing";
import { PriceTable, createModel } from "@nerva/ai-sdk";
import { scriptedModel } from "@nerva/ai-sdk/testing";
import type { TraceViewerMeter, TraceViewerUserUsage } from "@nerva/core/viewer";
import {
  createAuth,
  createExampleProtocols,
  createExampleRoutes,
  createOrchestrator,
  traceUIFromEnv,
} from "@nerva/example-kit";
import { InMemoryRunStore, RunQueue } from "@nerva/core";
import { DeclarativePolicyEngine } from "@nerva/core/policy";
import { createApp } from "./app.js";

const shot =
  process.env.NERVA_SCREENSHOTS === "1"
    ? join(import.meta.dirname, "..", "..", "..", "docs", "trace-viewer.png")
    : join(mkdtempSync(join(tmpdir(), "nerva-trace-viewer-")), "trace-viewer.png");
const EVIL = `<img src=x onerror="window.__pwned=1">`;

/**
 * Per-user totals of each request's usage (its local root's totalUsage): stands in for the
 * UsageMeter of @nerva/core, which lands separately; the viewer reads any `users()`.
 */
function perUserMeter(): TraceSink & TraceViewerMeter {
  const rows = new Map<string | null, TraceViewerUserUsage>();
  return {
    onSpanEnd(span: Span) {
      if (!span.isLocalRoot) return;
      const u = span.totalUsage;
      const row = rows.get(span.userId);
      rows.set(span.userId, {
        userId: span.userId,
        requests: (row?.requests ?? 0) + 1,
        inputTokens: (row?.inputTokens ?? 0) + u.promptTokens,
        outputTokens: (row?.outputTokens ?? 0) + u.completionTokens,
        costUsd: (row?.costUsd ?? 0) + u.costUsd,
      });
    },
    users: () => [...rows.values()].sort((a, b) => b.costUsd - a.costUsd),
  };
}

const traceUI = traceUIFromEnv({ NERVA_TRACE_UI: "1" }, { meter: perUserMeter() })!;
// The scripted model, priced, so that the concierge's model calls carry tokens and a cost.
const model = createModel(scriptedModel({ chunkDelaySeconds: 0.001 }), {
  prices: new PriceTable({ "nerva/scripted-1": { input: 2.5, output: 10 } }),
});
const demo = createOrchestrator({ concierge: model });
let server: Server;
let url: string;
let browser: Browser;
const requestIds: Record<string, string> = {};

async function chat(user: string, message: string): Promise<Response> {
  const minted = await fetch(`${url}/token`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ user }),
  });
  const { token } = (await minted.json()) as { token: string };
  return fetch(`${url}/chat`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
    body: JSON.stringify({ message }),
  });
}

async function api<T>(path: string): Promise<T> {
  return (await (await fetch(`${url}/_nerva/traces/api${path}`)).json()) as T;
}

/** Opens the trace whose root request carried `message`'s request id. */
async function openTrace(page: Page, label: string): Promise<TraceDetail> {
  const list = await api<{ traces: TraceDetail[] }>("/traces");
  for (const t of list.traces) {
    const detail = await api<TraceDetail>(`/traces/${t.traceId}`);
    if (detail.spans[0]?.requestId === requestIds[label]) {
      await page.click(`#traces tr[data-trace-id="${t.traceId}"]`);
      await page.waitForFunction(
        (n) => document.querySelectorAll("#waterfall .span-row").length === n,
        detail.spans.length,
      );
      return detail;
    }
  }
  throw new Error(`no trace for ${label}`);
}

beforeAll(async () => {
  // Loads the model's code once, outside any trace, so that the pictured trace is a warm one.
  await demo.orchestrator.handle("Is there a plane to Paris?", ExecContext.create());
  // The traces pictured are of /chat; no run, approval or protocol request is made here.
  const runs = new RunQueue({ store: new InMemoryRunStore() });
  const app = createApp({
    orchestrator: demo.orchestrator,
    routes: createExampleRoutes({
      orchestrator: demo.orchestrator,
      policy: new DeclarativePolicyEngine({ version: 1 }),
      runs,
    }),
    protocols: createExampleProtocols({
      orchestrator: demo.orchestrator,
      runs,
      agents: ["echo_agent"],
    }),
    auth: createAuth(),
    traceSink: traceUI.traceSink,
  });
  app.use(traceUI.viewer); // as main.ts mounts it
  server = app.listen(0, "127.0.0.1");
  await once(server, "listening");
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const requests: [string, string, string, number][] = [
    ["tool", "alice", "Find me a flight to Lisbon", 200],
    ["delegation", "alice", "Plan a trip to Rome", 200],
    ["model", "bob", "Is there a plane to Oslo on Friday?", 200],
    ["failing", "alice", "Find me a flight to Atlantis", 502],
  ];
  for (const [label, user, message, status] of requests) {
    const res = await chat(user, message);
    expect(res.status, label).toBe(status);
    requestIds[label] = res.headers.get("x-request-id")!;
  }
  browser = await launchChromium();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  server?.closeAllConnections();
  await new Promise((r) => server?.close(r));
  await demo.close();
});

describe("trace viewer in headless Chromium", () => {
  it(
    "lists the requests and draws each as a waterfall: a bar per span, nested, labelled, errors in red, events on click",
    { timeout: 90_000 },
    async () => {
      const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
      const external: string[] = [];
      const problems: string[] = [];
      page.on("request", (r) => {
        if (!r.url().startsWith(url)) external.push(r.url());
      });
      page.on("pageerror", (e) => problems.push(e.message));
      page.on("console", (m) => {
        if (m.type() === "error") problems.push(m.text());
      });
      await page.goto(`${url}/_nerva/traces`);
      await expect.poll(() => page.locator("#traces tr").count()).toBe(4);

      // The list: one row per request, newest first, with its status, tokens, cost and user.
      const list = await api<{ traces: TraceDetail[] }>("/traces");
      const rowText = (id: string) => page.textContent(`#traces tr[data-trace-id="${id}"]`);
      for (const t of list.traces) {
        const text = (await rowText(t.traceId))!;
        expect(text).toContain(t.rootName);
        expect(text).toContain(t.status);
      }
      expect(await page.locator('#traces tr[data-status="error"]').count()).toBe(1);

      // Per-user table: highest cost first, the model's user on top.
      await expect.poll(() => page.textContent("#users tr:first-child td:first-child")).toBe("bob");

      // The delegation: handle → runtime.invoke trip_agent → delegate → runtime.invoke flight_agent → tools.call
      const trip = await openTrace(page, "delegation");
      const rows = await page.$$eval("#waterfall .span-row", (els) =>
        els.map((e) => {
          const bar = e.querySelector(".bar")!.getBoundingClientRect();
          const label = e.querySelector(".span-label") as HTMLElement;
          return {
            id: (e as HTMLElement).dataset.spanId!,
            depth: Number((e as HTMLElement).dataset.depth),
            indent: parseFloat(getComputedStyle(label).paddingLeft),
            left: bar.left,
            right: bar.right,
            bars: e.querySelectorAll(".bar").length,
            text: e.querySelector(".bar-label")!.textContent!,
            name: label.textContent!,
          };
        }),
      );
      expect(rows.map((r) => r.id)).toEqual(trip.spans.map((s) => s.id)); // one row per span
      expect(rows.every((r) => r.bars === 1)).toBe(true);
      for (const [i, row] of rows.entries()) {
        const span = trip.spans[i]!;
        expect(row.depth).toBe(span.depth);
        if (span.parentId === null || span.depth === 0) continue;
        const parent = rows.find((r) => r.id === span.parentId)!;
        expect(rows.indexOf(parent)).toBeLessThan(i); // nested under its parent...
        expect(row.indent).toBeGreaterThan(parent.indent); // ...indented one step more
        expect(row.left).toBeGreaterThanOrEqual(parent.left - 1); // ...and inside it on the time axis
        expect(row.right).toBeLessThanOrEqual(parent.right + 1);
        expect(row.text).toMatch(/^\d+(\.\d+)? (ms|s)/); // duration label
      }
      const names = rows.map((r) => r.name);
      expect(names).toEqual(
        expect.arrayContaining([
          "runtime.invoketrip_agent",
          "delegateflight_agent",
          "runtime.invokeflight_agent",
          "tools.callsearch_flights",
        ]),
      );
      const delegate = rows.find((r) => r.name === "delegateflight_agent")!;
      const flight = rows.find((r) => r.name === "runtime.invokeflight_agent")!;
      expect(flight.depth).toBe(delegate.depth + 1);

      // Events as markers; a click shows the span's attributes and events.
      const tripRow = page.locator("#waterfall .span-row", {
        has: page.locator('.marker[data-event="trip.requested"]'),
      });
      await tripRow.click();
      await expect.poll(() => page.textContent("#detail")).toContain("trip.requested");
      const detail = (await page.textContent("#detail"))!;
      expect(detail).toContain("to = Rome");
      expect(detail).toContain("trip_agent");

      // The model call: tokens and cost on the chat spans' bars, and in the title.
      const withModel = await openTrace(page, "model");
      const chat = withModel.spans.find((s) => s.name === "chat")!;
      expect(chat.usage.totalTokens).toBeGreaterThan(0);
      const chatLabel = await page.textContent(
        `#waterfall .span-row[data-span-id="${chat.id}"] .bar-label`,
      );
      expect(chatLabel).toMatch(/^\d+(\.\d+)? ms · [\d,]+ tok · \$0\.\d+$/);
      expect(chatLabel).toContain(`${chat.totalUsage.totalTokens.toLocaleString("en-US")} tok`);
      expect(await page.textContent("#trace-title")).toContain(
        `${withModel.usage.totalTokens.toLocaleString("en-US")} tokens`,
      );

      // The failing request: its error spans in the error colour, others not.
      const failing = await openTrace(page, "failing");
      const colour = (status: string) =>
        page.$$eval(`#waterfall .span-row[data-status="${status}"] .bar`, (bars) =>
          bars.map((b) => getComputedStyle(b).backgroundColor),
        );
      const red = await colour("error");
      expect(red.length).toBe(failing.spans.filter((s) => s.status === "error").length);
      expect(red.length).toBeGreaterThanOrEqual(2); // the tool call, the handler, the request
      expect(new Set(red)).toEqual(new Set(["rgb(217, 48, 37)"]));
      const ok = await colour("ok");
      expect(ok.length).toBeGreaterThan(0);
      expect(ok).not.toContain("rgb(217, 48, 37)");
      const tool = failing.spans.find((s) => s.name === "tools.call")!;
      await page.click(`#waterfall .span-row[data-span-id="${tool.id}"]`);
      await expect.poll(() => page.textContent("#detail")).toContain("No airport serves Atlantis.");

      // The model call with its first chat span chosen, for the picture.
      await openTrace(page, "model");
      await page.click(`#waterfall .span-row[data-span-id="${chat.id}"]`);
      await expect.poll(() => page.textContent("#detail")).toContain("gen_ai.request.model");
      await page.screenshot({ path: shot, fullPage: true });

      expect(external).toEqual([]); // self-contained: nothing fetched elsewhere
      expect(problems).toEqual([]); // and nothing refused by its Content-Security-Policy
      await page.close();
    },
  );

  it("shows markup in span names, attributes, events and user ids as text, never as HTML", async () => {
    // A span and an event with markup in their names and attributes (untrusted: e.g. from a worker).
    const ctx = ExecContext.create({ userId: EVIL, traceSink: traceUI.traceSink });
    await ctx.span(EVIL, async (inner) => {
      inner.event(EVIL, { payload: "</script><script>window.__pwned=2</script>" });
    });
    const page = await browser.newPage();
    await page.goto(`${url}/_nerva/traces`);
    const [evil] = (await api<{ traces: TraceDetail[] }>("/traces")).traces.filter(
      (t) => t.rootName === EVIL,
    );
    await page.click(`#traces tr[data-trace-id="${evil!.traceId}"]`);
    await page.waitForSelector("#waterfall .span-row");
    expect(await page.textContent("#waterfall .span-row .span-name")).toBe(EVIL);
    expect(await page.textContent(`#traces tr[data-trace-id="${evil!.traceId}"] td.root`)).toBe(
      EVIL,
    );
    await page.click("#waterfall .span-row");
    await expect
      .poll(() => page.textContent("#detail"))
      .toContain("payload = </script><script>window.__pwned=2</script>");
    expect(await page.locator("img").count()).toBe(0);
    expect(await page.evaluate(() => (window as { __pwned?: number }).__pwned)).toBeUndefined();
    expect(await page.locator("#users td", { hasText: EVIL }).count()).toBe(1);
    await page.close();
  });
});
