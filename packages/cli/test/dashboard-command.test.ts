// `nerva dashboard` as a person starts it: real processes, a real SQLite file, real ports.
// A bad flag or a busy port ends it at once with one line; it executes runs only when asked.
// Runs the built bin (dist/esm/main.js): build first.
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import Database from "better-sqlite3";
import { AgentRunner } from "../src/agent-runner.js";
import * as desk from "./refund-desk.fixture.js";
import { exited, fixture, nerva, oneLine, requireBuild, start } from "./nerva-bin.js";

const dir = mkdtempSync(join(tmpdir(), "nerva-dashboard-cli-"));
beforeAll(requireBuild);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Reads the dashboard's SSE stream of run `id` until `type` arrives. */
async function waitForEvent(url: string, id: string, type: string): Promise<void> {
  const res = await fetch(new URL(`/api/runs/${id}/events`, url));
  const reader = (res.body as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  let text = "";
  while (!text.includes(`event: ${type}\n`)) {
    const { done, value } = await reader.read();
    if (done) throw new Error(`the stream ended before ${type}:\n${text}`);
    text += decoder.decode(value);
  }
  await reader.cancel();
}

describe("nerva dashboard", () => {
  it("ends at once with one line and exit 2 on a port that is not a port", () => {
    for (const port of ["abc", "70000", "-1", "1.5"]) {
      const r = nerva(["dashboard", fixture, `--port=${port}`], "", 20_000);
      expect(r.status, `--port ${port}`).toBe(2);
      expect(oneLine(r.stderr)).toMatch(/--port must be a whole number from 0 to 65535/);
    }
  });

  it("ends at once with one line and a non-zero exit when the port is in use", async () => {
    const busy = createServer();
    await new Promise<void>((r) => busy.listen(0, "127.0.0.1", r));
    try {
      const { port } = busy.address() as AddressInfo;
      const r = nerva(["dashboard", fixture, "--port", String(port)], "", 20_000);
      expect(r.status).not.toBe(0);
      expect(r.status).not.toBeNull();
      expect(oneLine(r.stderr)).toMatch(new RegExp(`port ${port} .*in use`));
    } finally {
      busy.close();
    }
  });

  it("refuses a --store that does not exist and creates nothing", () => {
    const missing = join(dir, "missing.db");
    const r = nerva(["dashboard", fixture, "--store", missing], "", 20_000);
    expect(r.status).toBe(2);
    expect(oneLine(r.stderr)).toMatch(/missing\.db does not exist/);
    expect(existsSync(missing)).toBe(false);
  });

  it("views a store without writing to it (no session key record either)", async () => {
    const db = join(dir, "app.db");
    // The app keeps its own session key: the store holds no key record.
    const app = await AgentRunner.load(desk, {
      store: { sqlite: db },
      sessionKey: "an app's own session key of 32 characters",
    });
    const paused = await app.run({ orderId: "11" });
    await app.cleanup();
    expect(paused.status).toBe("paused");
    const count = () => {
      const raw = new Database(db, { readonly: true, fileMustExist: true });
      try {
        return raw.prepare("SELECT COUNT(*) AS n FROM nerva_runs").get();
      } finally {
        raw.close();
      }
    };
    const before = count();
    const viewer = await start(["dashboard", fixture, "--store", db, "--port", "0"], /(http:\S+)/);
    try {
      const url = viewer.match[1] as string;
      const list = (await (await fetch(new URL("/api/runs", url))).json()) as unknown[];
      expect(list).toHaveLength(1);
      const one = await fetch(new URL(`/api/runs/${paused.runId}`, url));
      expect(((await one.json()) as { status: string }).status).toBe("paused");
    } finally {
      viewer.child.kill("SIGINT");
      expect(await exited(viewer.child)).toBe(0);
    }
    expect(count()).toEqual(before);
  });

  it("executes runs only with --workers, and says which it does", { timeout: 60_000 }, async () => {
    const db = join(dir, "viewer.db");
    const paused = nerva(["run", fixture, "--input", '{"orderId":"6"}', "--store", db]);
    const id = /run (run_\w+)/.exec(paused.stderr)?.[1] as string;
    const viewer = await start(["dashboard", fixture, "--store", db, "--port", "0"], /(http:\S+)/);
    try {
      const url = viewer.match[1] as string;
      expect(viewer.out()).toMatch(/does not execute runs.*--workers/);
      expect(await (await fetch(new URL("/api/graph", url))).json()).toMatchObject({
        workers: false,
      });
      // Answered elsewhere, the run waits for a worker: this viewer does not run it.
      const resumed = nerva([
        ...["runs", "resume", id, "--store", db, "--value", '"approved"', "--module", fixture],
      ]);
      expect(resumed.status).toBe(0);
      const seen = (await (await fetch(new URL(`/api/runs/${id}`, url))).json()) as {
        status: string;
      };
      expect(seen.status).toBe("pending");
    } finally {
      viewer.child.kill("SIGINT");
      expect(await exited(viewer.child)).toBe(0);
    }
    const worker = await start(
      ["dashboard", fixture, "--store", db, "--port", "0", "--workers"],
      /(http:\S+)/,
    );
    try {
      const url = worker.match[1] as string;
      expect(worker.out()).toMatch(/executes the runs of its queues/);
      expect(await (await fetch(new URL("/api/graph", url))).json()).toMatchObject({
        workers: true,
      });
      await waitForEvent(url, id, "run.succeeded");
    } finally {
      worker.child.kill("SIGINT");
      expect(await exited(worker.child)).toBe(0);
    }
    expect(nerva(["runs", "show", id, "--store", db]).stdout).toMatch(/"status": "succeeded"/);
  });
});
