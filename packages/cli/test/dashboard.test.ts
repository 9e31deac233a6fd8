// The runs dashboard in real headless Chromium (Debian's chromium, driven by playwright-core):
// trigger a run, watch it pause, answer in the form, see it complete. Saves the screenshot
// docs/images/runs-dashboard*.png when NERVA_SCREENSHOTS=1 (else to a temp folder).
import { mkdirSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { launchChromium, type Browser } from "@nerva/test-chromium";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { InMemoryRunStore, InProcessRuntime, RunQueue, GraphHost } from "@nerva/core";
import { startDashboard, type Dashboard } from "../src/index.js";
import { graph, handlers } from "./refund-desk.fixture.js";

const shots =
  process.env.NERVA_SCREENSHOTS === "1"
    ? join(import.meta.dirname, "..", "..", "..", "docs", "images")
    : mkdtempSync(join(tmpdir(), "nerva-dashboard-"));
let browser: Browser;
let dashboard: Dashboard;
const agents = new InProcessRuntime();
for (const [name, h] of Object.entries(handlers)) agents.register(name, h);
const store = new InMemoryRunStore();
const runtime = new GraphHost({
  graph,
  runtime: agents,
  queue: new RunQueue({ store, name: "desk" }),
  entryPoints: [{ id: "default" }, { id: "nightly", trigger: { type: "manual" } }],
});

beforeAll(async () => {
  await runtime.start();
  dashboard = await startDashboard(runtime, store);
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  await dashboard?.close();
  await runtime.stop();
});

describe("runs dashboard", () => {
  it(
    "triggers a run, shows it paused at the input node, answers in the form, shows it completed",
    { timeout: 60_000 },
    async () => {
      const page = await browser.newPage({ viewport: { width: 1280, height: 760 } });
      const external: string[] = [];
      page.on("request", (r) => {
        if (!r.url().startsWith(dashboard.url)) external.push(r.url());
      });
      await page.goto(dashboard.url);
      await expect.poll(() => page.textContent("#graph-name")).toBe("refund_desk");
      await page.fill("#trigger-input", '{"orderId":"42"}');
      await page.click("#trigger-button");
      // It pauses at the review node: the form asks the node's question, the node is highlighted.
      await page.waitForSelector("#answer-form:not([hidden])");
      expect(await page.textContent("#prompt")).toBe("Refund 42 for order 42? (approved/declined)");
      expect(await page.getAttribute('#graph g[data-node="review"]', "class")).toContain("current");
      expect(await page.getAttribute('#graph g[data-node="lookup"]', "class")).toContain("visited");
      await expect.poll(() => page.textContent("#events")).toContain("run.paused review");
      await expect.poll(() => page.textContent("#runs")).toContain("paused");
      // A wrong answer is refused with the reason, and nothing moves on.
      await page.fill("#answer", "maybe");
      await page.click("#answer-button");
      await expect.poll(() => page.textContent("#answer-error")).toMatch(/INVALID_INPUT/);
      expect(await page.textContent("#status")).toBe("paused");
      mkdirSync(shots, { recursive: true });
      await page.fill("#answer", "approved");
      await page.screenshot({
        path: join(shots, "runs-dashboard-paused.png"),
      });
      await page.click("#answer-button");
      await expect.poll(() => page.textContent("#status"), { timeout: 20_000 }).toBe("succeeded");
      await expect.poll(() => page.textContent("#events")).toContain("run.succeeded");
      expect(await page.textContent("#state")).toContain('"refund": "refunded order 42"');
      expect(await page.getAttribute('#graph g[data-node="refund"]', "class")).toContain("visited");
      await expect.poll(() => page.textContent("#runs")).toContain("succeeded");
      await page.screenshot({
        path: join(shots, "runs-dashboard.png"),
      });
      expect(external).toEqual([]); // self-contained: no CDN, nothing fetched elsewhere
      await page.close();
    },
  );

  it("serves loopback only unless told otherwise, and keeps internals out of answers", async () => {
    await expect(startDashboard(runtime, store, { host: "0.0.0.0" })).rejects.toThrow(
      /allowRemote/,
    );
    await expect(startDashboard(runtime, store, { port: 70_000 })).rejects.toMatchObject({
      code: "INVALID_OPTIONS",
    });
    const taken = Number(new URL(dashboard.url).port);
    await expect(startDashboard(runtime, store, { port: taken })).rejects.toMatchObject({
      code: "UNAVAILABLE",
      message: expect.stringContaining(`port ${taken} is already in use`),
    });
    const res = await fetch(new URL("/api/runs/run_nope", dashboard.url));
    expect(res.status).toBe(404);
    const bad = await fetch(new URL("/api/runs", dashboard.url), {
      method: "POST",
      body: "{not json",
    });
    expect(bad.status).toBe(400);
    expect(await bad.json()).toEqual({
      error: { code: "INVALID_INPUT", message: "The request body must be a JSON object." },
    });
  });
});

describe("runs dashboard as a person sees it", () => {
  const store2 = new InMemoryRunStore();
  const runtime2 = new GraphHost({
    graph,
    runtime: agents,
    queue: new RunQueue({ store: store2, name: "seen" }),
  });
  let seen: Dashboard;
  beforeAll(async () => {
    await runtime2.start();
    seen = await startDashboard(runtime2, store2);
  });
  afterAll(async () => {
    await seen?.close();
    await runtime2.stop();
  });

  it("says it is loading until the first list arrives, then that there are none", async () => {
    const page = await browser.newPage();
    let release = () => {};
    const held = new Promise<void>((r) => (release = r));
    await page.route("**/api/runs", async (route) => {
      await held;
      await route.continue();
    });
    await page.goto(seen.url);
    await expect.poll(() => page.textContent("#graph-name")).toBe("refund_desk");
    expect(await page.textContent("#empty")).toMatch(/Loading/);
    expect(await page.isVisible("#empty")).toBe(true);
    release();
    await expect.poll(() => page.textContent("#empty")).toBe("No runs yet.");
    await page.close();
  });

  it(
    "opens #run=<id> on load with its times, allowed answers, wrapped state and every edge drawn",
    { timeout: 60_000 },
    async () => {
      const orderId = "A".repeat(400);
      const res = await fetch(new URL("/api/runs", seen.url), {
        method: "POST",
        body: JSON.stringify({ entryPoint: "default", input: { orderId } }),
      });
      const { runId } = (await res.json()) as { runId: string };
      const page = await browser.newPage({ viewport: { width: 1280, height: 760 } });
      await page.goto(`${seen.url}#run=${runId}`);
      await expect.poll(() => page.textContent("#exec-id")).toBe(runId);
      await expect.poll(() => page.textContent("#status"), { timeout: 20_000 }).toBe("paused");
      // Created and last updated, both shown as times.
      const created = Date.parse((await page.getAttribute("#created", "datetime")) as string);
      const updated = Date.parse((await page.getAttribute("#updated", "datetime")) as string);
      expect(created).toBeGreaterThan(0);
      expect(updated).toBeGreaterThanOrEqual(created);
      expect(await page.textContent("#created")).not.toBe("");
      // The answer box names the values the node's schema allows.
      expect(await page.textContent("#allowed")).toMatch(/approved.*declined/);
      // A 400-character value wraps inside its card: nothing runs off the page.
      await expect.poll(() => page.textContent("#state")).toContain(orderId);
      // Browser code as text: this package compiles without the DOM's types.
      const overflow = await page.evaluate(`(() => {
        const html = document.documentElement, state = document.getElementById("state");
        return { page: html.scrollWidth - html.clientWidth, state: state.scrollWidth - state.clientWidth };
      })()`);
      expect(overflow).toEqual({ page: 0, state: 0 });
      // Every edge is drawn, review's conditional one to END too, and none runs through a
      // node that is neither its start nor its end.
      const crossings = (await page.evaluate(`(() => {
        const edges = [...document.querySelectorAll("#graph [data-from]")];
        const boxes = [...document.querySelectorAll("#graph g[data-node]")].map((g) => {
          const r = g.querySelector("rect");
          return { id: g.dataset.node, x: r.x.baseVal.value, y: r.y.baseVal.value, w: r.width.baseVal.value, h: r.height.baseVal.value };
        });
        const through = new Set();
        for (const e of edges) {
          for (let d = 0; d <= e.getTotalLength(); d += 2) {
            const p = e.getPointAtLength(d);
            for (const b of boxes) {
              if (b.id === e.dataset.from || b.id === e.dataset.to) continue;
              if (p.x > b.x && p.x < b.x + b.w && p.y > b.y && p.y < b.y + b.h)
                through.add(e.dataset.from + "->" + e.dataset.to + " through " + b.id);
            }
          }
        }
        return { found: edges.map((e) => e.dataset.from + "->" + e.dataset.to), through: [...through] };
      })()`)) as { found: string[]; through: string[] };
      expect(crossings.found).toEqual(
        expect.arrayContaining(["review->refund", "review->__end__", "refund->__end__"]),
      );
      expect(crossings.through).toEqual([]);
      // Picking a row puts its link in the address.
      await page.click(`tr[data-id="${runId}"]`);
      expect(new URL(page.url()).hash).toBe(`#run=${runId}`);
      await page.close();
    },
  );
});
