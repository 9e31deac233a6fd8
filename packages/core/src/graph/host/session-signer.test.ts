// The sessionState key a runtime reads from its store: a store that fails once (here a SQLite
// file another connection holds locked) fails that call only, not every later one.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { ExecContext } from "../../context/exec-context.js";
import { NervaError } from "../../errors.js";
import { RunQueue } from "../../runs/run-queue.js";
import { SqliteRunStore } from "../../runs/sqlite/sqlite-run-store.js";
import { openDatabase } from "../../internal/sqlite.js";
import { InProcessRuntime } from "../../runtime/in-process-runtime.js";
import { END, GraphHost, defineGraph, fnNode, inputNode } from "../index.js";

const dir = mkdtempSync(join(tmpdir(), "nerva-signer-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const S = z.object({ n: z.number().optional(), ok: z.string().optional() });

describe("SessionSigner", () => {
  it("reads the stored key again after a failed read instead of failing for good", async () => {
    const path = join(dir, "key.db");
    const store = new SqliteRunStore({ path, busyTimeoutSeconds: 0 });
    const graph = defineGraph({
      name: "signed",
      state: S,
      nodes: {
        a: fnNode<z.output<typeof S>>(async () => ({ n: 1 })),
        ask: inputNode<z.output<typeof S>>({ prompt: "ok?", writes: "ok", schema: z.string() }),
      },
      edges: [
        ["a", "ask"],
        ["ask", END],
      ],
      entry: "a",
    });
    // No sessionKey: the runtime keeps its key in the store.
    const runtime = new GraphHost({
      graph,
      runtime: new InProcessRuntime(),
      queue: new RunQueue({ store, name: "s" }),
      runner: { leaseSeconds: 30, heartbeatSeconds: 10 },
    });
    const other = openDatabase(path, "path", "test");
    try {
      await runtime.start();
      const id = await runtime.trigger("default", {}, ExecContext.create());
      const entry = new RunQueue({ store, name: "s.default" });
      expect((await entry.wait(id, { until: ["paused"], timeoutSeconds: 10 })).status).toBe(
        "paused",
      );
      other.exec("BEGIN IMMEDIATE");
      const failed = await runtime.get(id).then(
        () => null,
        (err: unknown) => err,
      );
      other.exec("COMMIT");
      expect(failed).toBeInstanceOf(NervaError);
      expect((failed as NervaError).code).toBe("UNAVAILABLE");
      const paused = await runtime.get(id);
      expect(paused?.status).toBe("paused");
      expect(paused?.sessionState?.sig).toMatch(/^[A-Za-z0-9_-]{20,}$/);
      const done = await runtime.wait(
        (await runtime.resume(paused!.sessionState!, "yes", { ctx: ExecContext.create() })).runId,
        { timeoutSeconds: 10 },
      );
      expect(done.status).toBe("succeeded");
    } finally {
      await runtime.stop({ graceSeconds: 0 });
      other.close();
      await store.close();
    }
  });
});
