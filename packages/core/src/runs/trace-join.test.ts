// Durable runs join the enqueuer's trace across processes: a run enqueued here, under a span of a
// request that came with a traceparent, is executed by a Runner in another process over the same
// SQLite file, and every span that worker reports nests under the enqueuer's `runs.enqueue` span.
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { ExecContext } from "../context/exec-context.js";
import { MemoryTraceSink } from "../tracing/memory-sink.js";
import { RunQueue } from "./run-queue.js";
import { SqliteRunStore } from "./sqlite/sqlite-run-store.js";

const here = dirname(fileURLToPath(import.meta.url));
const tsx = pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href;
const dir = mkdtempSync(join(tmpdir(), "nerva-runs-trace-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface Logged {
  name: string;
  kind: string;
  trace_id: string;
  span_id: string;
  parent_id: string | null;
  status: string;
  attributes: Record<string, unknown>;
  usage: { promptTokens: number; completionTokens: number };
  pid: number;
}

/** Starts the worker process; resolves once it claims runs, with a stop function. */
async function startWorker(path: string, log: string) {
  const child = spawn(
    process.execPath,
    ["--import", tsx, join(here, "trace-worker.test-support.ts")],
    {
      env: { ...process.env, NERVA_TEST_CONFIG: JSON.stringify({ path, log }) },
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  let stderr = "";
  child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  await new Promise<void>((resolve, reject) => {
    let out = "";
    child.stdout.on("data", (d: Buffer) => {
      out += d.toString();
      if (out.includes("ready\n")) resolve();
    });
    void exited.then(() => reject(new Error(`worker exited before ready: ${stderr}`)));
  });
  return {
    pid: child.pid as number,
    stop: async () => {
      child.kill("SIGTERM");
      await exited;
    },
  };
}

const readLog = (log: string): Logged[] =>
  existsSync(log)
    ? readFileSync(log, "utf8")
        .split("\n")
        .filter((l) => l !== "")
        .map((l) => JSON.parse(l) as Logged)
    : [];

describe("durable runs on another worker join the enqueuer's trace (SQLite, two processes)", () => {
  it("nests each attempt's spans under the enqueuer's runs.enqueue span, in its trace", async () => {
    const path = join(dir, "runs.db");
    const log = join(dir, "spans.jsonl");
    const store = new SqliteRunStore({ path });
    const queue = new RunQueue({ store, name: "traced" });
    const worker = await startWorker(path, log);
    try {
      const sink = new MemoryTraceSink();
      const caller = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
      const ctx = ExecContext.create({ userId: "u1", traceparent: caller, traceSink: sink });
      const run = await ctx.span("http.request", (inner) =>
        queue.enqueue({
          handler: "traced",
          input: { message: "go", args: { fail_first: "1" } },
          ctx: inner,
          retry: { maxAttempts: 2, initialDelaySeconds: 0, jitter: 0 },
        }),
      );
      const done = await queue.wait(run.id, { timeoutSeconds: 30 });
      expect(done.status).toBe("succeeded");
      expect(done.result?.output).toBe("done on attempt 2");

      // Here: the enqueue span, under the request's span, in the caller's trace.
      const request = sink.spans.find((s) => s.name === "http.request");
      const enqueue = sink.spans.find((s) => s.name === "runs.enqueue");
      expect(enqueue?.parentSpan).toBe(request);
      expect(enqueue?.kind).toBe("client");
      expect(enqueue?.attributes).toMatchObject({ "run.id": run.id, "run.queue": "traced" });
      expect(run.context.span_id).toBe(enqueue?.id);
      expect(run.traceId).toBe("4bf92f3577b34da6a3ce929d0e0e4736");

      // There: one `run` span per attempt, under the enqueue span; the handler's spans below.
      let spans: Logged[] = [];
      for (let i = 0; i < 100 && spans.filter((s) => s.name === "run").length < 2; i++) {
        await new Promise((r) => setTimeout(r, 50));
        spans = readLog(log);
      }
      for (const s of spans) {
        expect(s.trace_id).toBe(ctx.traceId);
        expect(s.pid).toBe(worker.pid);
      }
      const runs = spans.filter((s) => s.name === "run");
      expect(runs.map((s) => s.parent_id)).toEqual([enqueue?.id, enqueue?.id]);
      expect(runs.map((s) => s.kind)).toEqual(["server", "server"]);
      expect(runs.map((s) => s.status)).toEqual(["error", "ok"]);
      expect(runs.map((s) => s.attributes["run.attempt"])).toEqual([1, 2]);
      for (const r of runs) {
        const invoke = spans.find((s) => s.name === "runtime.invoke" && s.parent_id === r.span_id);
        const work = spans.find((s) => s.name === "work" && s.parent_id === invoke?.span_id);
        expect(invoke?.attributes["handler"]).toBe("traced");
        expect(work?.usage).toMatchObject({ promptTokens: 3, completionTokens: 2 });
      }
    } finally {
      await worker.stop();
      await store.close();
    }
  }, 60_000);
});
