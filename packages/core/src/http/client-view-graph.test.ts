// What a client may see of an execution: the result and the typed events of real executions,
// whose nodes and tools fail with operator text, shown without it.
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { ExecContext } from "../context/exec-context.js";
import { ErrorCode, NervaError } from "../errors.js";
import { InMemoryRunStore } from "../runs/memory/in-memory-store.js";
import { RunQueue } from "../runs/run-queue.js";
import { InProcessRuntime } from "../runtime/in-process-runtime.js";
import { FunctionToolManager, defineTool } from "../tools/function-tool-manager.js";
import { END, GraphHost, defineGraph, fnNode, inputNode, type GraphRun } from "../index.js";
import { RunEventType, type RunEvent } from "../runs/types.js";
import { clientRun, clientRunError, clientRunEvent } from "./client-view.js";

const SECRET = /hunter2|\/srv\/app/;
const runtimes: GraphHost[] = [];
afterEach(async () => {
  for (const r of runtimes.splice(0)) await r.stop({ graceSeconds: 0 });
});

const S = z.object({ n: z.number().optional() });
type S = z.output<typeof S>;

async function failing(thrown: () => Error) {
  const tools = new FunctionToolManager().register(
    defineTool({
      name: "db",
      description: "db",
      parameters: z.object({}),
      run: () => {
        throw new Error("connect postgres://admin:hunter2@db failed");
      },
    }),
  );
  const runtime = new GraphHost({
    graph: defineGraph({
      name: "leaky",
      state: S,
      nodes: {
        work: fnNode<S>(async (_s, ctx) => {
          await ctx.kit.tools.call("db", {});
          throw thrown();
        }),
      },
      edges: [["work", END]],
      entry: "work",
    }),
    runtime: new InProcessRuntime(),
    tools,
    queue: new RunQueue({
      store: new InMemoryRunStore(),
      retry: { maxAttempts: 2, initialDelaySeconds: 0.01 },
    }),
  });
  runtimes.push(runtime);
  await runtime.start();
  const result = await runtime.triggerAndWait("default", {}, ExecContext.create(), {
    timeoutSeconds: 10,
  });
  const events: RunEvent[] = [];
  for await (const e of runtime.events(result.runId)) events.push(e);
  return { result, events };
}

describe("clientRun and clientRunEvent", () => {
  it("show a failed node's error, a tool's error and the worker's ids without their operator text", async () => {
    const { result, events } = await failing(
      () => new Error("ENOENT: /srv/app/orders.json (password hunter2)"),
    );
    expect(result.status).toBe("failed");
    // The raw views carry the operator text (what this guards against)...
    expect(JSON.stringify(result)).toMatch(SECRET);
    expect(JSON.stringify(events)).toMatch(SECRET);
    // ...the client views do not.
    const shown = clientRun(result);
    expect(JSON.stringify(shown)).not.toMatch(SECRET);
    expect(shown.error).toEqual({ code: "NODE_FAILED", message: "a node failed" });
    expect(shown.state).toEqual(result.state);
    const client = events.map(clientRunEvent);
    expect(JSON.stringify(client)).not.toMatch(SECRET);
    expect(client.map((e) => [e.type, e.seq])).toEqual(events.map((e) => [e.type, e.seq]));
    expect(client.find((e) => e.type === RunEventType.STARTED)?.data).toEqual({});
    expect(client.find((e) => e.type === RunEventType.NODE_FAILED)?.data).toMatchObject({
      node: "work",
      code: "NODE_FAILED",
      error: "a node failed",
    });
    expect(client.find((e) => e.type === RunEventType.TOOL_COMPLETED)?.data).toMatchObject({
      tool: "db",
      status: "error",
    });
    // The run's errors (HANDLER_ERROR: the graph's handler failed) with their fixed text.
    for (const type of [RunEventType.RETRYING, RunEventType.FAILED]) {
      expect(client.find((e) => e.type === type)?.data.error).toEqual({
        code: "HANDLER_ERROR",
        message: "the agent failed",
        retriable: true,
      });
    }
  });

  it("keep a typed error a client may read as it is", async () => {
    const { result } = await failing(
      () => new NervaError(ErrorCode.POLICY_DENIED, "Refunds over 500 need a manager."),
    );
    expect(clientRun(result).error).toEqual({
      code: "POLICY_DENIED",
      message: expect.stringContaining("Refunds over 500 need a manager."),
    });
  });

  it("keep the last known state and path while an answered execution waits for a worker", async () => {
    const Draft = z.object({ draft: z.string().optional(), ok: z.enum(["yes", "no"]).optional() });
    type Draft = z.output<typeof Draft>;
    const runtime = new GraphHost({
      graph: defineGraph({
        name: "drafts",
        state: Draft,
        nodes: {
          write: fnNode<Draft>(async () => ({ draft: "Dear customer, ..." })),
          review: inputNode<Draft>({
            prompt: "Send it?",
            writes: "ok",
            schema: z.enum(["yes", "no"]),
          }),
        },
        edges: [
          ["write", "review"],
          ["review", END],
        ],
        entry: "write",
      }),
      runtime: new InProcessRuntime(),
      queue: new RunQueue({ store: new InMemoryRunStore() }),
    });
    runtimes.push(runtime);
    await runtime.start();
    const paused = await runtime.triggerAndWait("default", { draft: "" }, ExecContext.create(), {
      timeoutSeconds: 10,
    });
    expect(paused.status).toBe("paused");
    expect(paused.state).toEqual({ draft: "Dear customer, ..." });
    // No worker picks the answered execution up: it stays pending as long as the test looks.
    await runtime.stop({ graceSeconds: 0 });
    const id = paused.runId;
    const answered = clientRun(await runtime.resume(id, "yes"));
    const read = clientRun((await runtime.get(id)) as GraphRun);
    for (const shown of [answered, read]) {
      expect(shown.status).toBe("pending");
      expect(shown.state).toEqual(paused.state);
      expect(shown.path).toEqual(paused.path);
      expect(shown.pausedAt).toBeNull();
      expect(shown.sessionState).toBeNull();
    }
  });

  it("show any other code as INTERNAL", () => {
    expect(
      clientRunError({
        code: "SQLITE_BUSY",
        message: "database is locked at /srv/app/runs.db",
      }),
    ).toEqual({
      code: "INTERNAL",
      message: "the run failed",
    });
  });
});
