import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { ExecContext } from "../../context/exec-context.js";
import { NervaError, UnrecoverableError } from "../../errors.js";
import { rejection } from "../../testing/rejection.js";
import { InMemoryRunStore } from "../../runs/memory/in-memory-store.js";
import { RunQueue } from "../../runs/run-queue.js";
import { Runner } from "../../runs/runner.js";
import { InProcessRuntime } from "../../runtime/in-process-runtime.js";
import type { PartialAgentResult } from "../../types/agent.js";
import { FunctionToolManager, defineTool } from "../../tools/function-tool-manager.js";
import {
  END,
  GraphHost,
  agentNode,
  defineGraph,
  fnNode,
  inputNode,
  type GraphHostOptions,
  type SessionState,
} from "../index.js";
import { RunEventType, type RunEvent } from "../../runs/types.js";

const RefundState = z.object({
  orderId: z.string().optional(),
  total: z.number().optional(),
  decision: z.enum(["approved", "declined"]).optional(),
  refund: z.string().optional(),
});
type RefundState = z.output<typeof RefundState>;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const runtimes: GraphHost[] = [];
afterEach(async () => {
  for (const r of runtimes.splice(0)) await r.stop({ graceSeconds: 0 });
});

function refundDesk(calls: string[] = []) {
  const agents = new InProcessRuntime();
  agents.register("intake_agent", async () => {
    calls.push("intake");
    return { output: "ok", data: { orderId: "42" } };
  });
  agents.register("refund_agent", async (input) => {
    calls.push("refund");
    return `refunded ${input.args.orderId}`;
  });
  const graph = defineGraph({
    name: "refund_desk",
    state: RefundState,
    nodes: {
      intake: agentNode("intake_agent"),
      lookup: fnNode<RefundState>(async () => {
        calls.push("lookup");
        return { total: 12.5 };
      }),
      review: inputNode<RefundState>({
        prompt: (s) => `Refund ${s.total}?`,
        kind: "approval",
        writes: "decision",
        schema: z.enum(["approved", "declined"]),
      }),
      refund: agentNode<RefundState>("refund_agent", {
        input: (s) => ({ message: "refund", args: { orderId: s.orderId ?? "" } }),
      }),
    },
    edges: [
      ["intake", "lookup"],
      ["lookup", "review"],
      ["review", (s) => (s.decision === "approved" ? "refund" : END), ["refund", END]],
      ["refund", END],
    ],
    entry: "intake",
    output: (s) => s.refund ?? "no refund",
  });
  return { agents, graph };
}

function make(options: Partial<GraphHostOptions> & Pick<GraphHostOptions, "graph" | "runtime">) {
  const runtime = new GraphHost({
    queue: new RunQueue({
      store: new InMemoryRunStore(),
      name: "t",
      retry: { maxAttempts: 3, initialDelaySeconds: 0, jitter: 0 },
    }),
    runner: { leaseSeconds: 2, heartbeatSeconds: 0.1 },
    ...options,
  });
  runtimes.push(runtime);
  return runtime;
}

async function code(p: Promise<unknown>): Promise<{ code: string; message: string }> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(NervaError);
    return { code: (err as NervaError).code, message: (err as Error).message };
  }
  throw new Error("expected a NervaError");
}

describe("GraphHost", () => {
  it("pauses at the input node, refuses wrong answers, resumes and succeeds", async () => {
    const calls: string[] = [];
    const { agents, graph } = refundDesk(calls);
    const runtime = make({ graph, runtime: agents });
    await runtime.start();
    const ctx = ExecContext.create({ userId: "u1" });
    const paused = await runtime.triggerAndWait("default", {}, ctx, { timeoutSeconds: 10 });
    expect(paused).toMatchObject({
      status: "paused",
      pausedAt: "review",
      state: { orderId: "42", total: 12.5 },
      path: ["intake#1", "lookup#1"],
      pause: { prompt: "Refund 12.5?", kind: "approval" },
    });
    // The refusal speaks of the answer, never of an internal parameter's name.
    const refused = await code(runtime.resume(paused.runId, "maybe"));
    expect(refused).toMatchObject({ code: "INVALID_INPUT" });
    expect(refused.message).not.toMatch(/content/);
    expect(refused.message).toMatch(/answer/);
    await runtime.resume(paused.runId, "approved");
    const done = await runtime.wait(paused.runId, { timeoutSeconds: 10 });
    expect(done).toMatchObject({
      status: "succeeded",
      output: "refunded 42",
      state: { decision: "approved", refund: "refunded 42" },
      path: ["intake#1", "lookup#1", "review#1", "refund#1"],
      sessionState: null,
    });
    // Committed nodes never ran again after the pause.
    expect(calls).toEqual(["intake", "lookup", "refund"]);
    expect(await code(runtime.resume(paused.runId, "approved"))).toMatchObject({
      code: "INVALID_STATE",
      message: expect.stringMatching(/is succeeded, not paused/),
    });
    expect(await code(runtime.resume("run_nope", "approved"))).toMatchObject({
      code: "NOT_FOUND",
    });
  });

  it("serves the run's own events, node visits named, replayable from an offset", async () => {
    const { agents, graph } = refundDesk();
    const queue = new RunQueue({ store: new InMemoryRunStore(), name: "ev" });
    const runtime = make({ graph, runtime: agents, queue });
    const live: RunEvent[] = [];
    runtime.subscribe(null, (e) => void live.push(e));
    await runtime.start();
    const paused = await runtime.triggerAndWait("default", {}, ExecContext.create(), {
      timeoutSeconds: 10,
    });
    await runtime.resume(paused.runId, "declined");
    const done = await runtime.wait(paused.runId, { timeoutSeconds: 10 });
    expect(done.status).toBe("succeeded");
    expect(done.output).toBe("no refund");
    await sleep(50);
    const typed: RunEvent[] = [];
    for await (const e of runtime.events(paused.runId)) typed.push(e);
    const raw: RunEvent[] = [];
    for await (const e of queue.events(paused.runId)) raw.push(e);
    // One stream: the host's events are the queue's, type for type, seq for seq.
    expect(typed.map((e) => [e.seq, e.type])).toEqual(raw.map((e) => [e.seq, e.type]));
    const lifecycle = new Set<string>([
      RunEventType.NODE_STARTED,
      RunEventType.NODE_COMPLETED,
      RunEventType.PAUSED,
      RunEventType.RESUMED,
      RunEventType.SUCCEEDED,
    ]);
    expect(
      typed.filter((e) => lifecycle.has(e.type)).map((e) => [e.type, e.data.node ?? null]),
    ).toEqual([
      [RunEventType.NODE_STARTED, "intake"],
      [RunEventType.NODE_COMPLETED, "intake"],
      [RunEventType.NODE_STARTED, "lookup"],
      [RunEventType.NODE_COMPLETED, "lookup"],
      [RunEventType.NODE_STARTED, "review"],
      [RunEventType.PAUSED, "review"],
      [RunEventType.RESUMED, null],
      [RunEventType.NODE_STARTED, "review"],
      [RunEventType.NODE_COMPLETED, "review"],
      [RunEventType.SUCCEEDED, null],
    ]);
    expect(typed.find((e) => e.type === RunEventType.NODE_COMPLETED)?.data).toEqual({
      node: "intake",
      visit: 1,
      key: "intake#1",
    });
    expect(typed.find((e) => e.type === RunEventType.PAUSED)).toMatchObject({
      data: { node: "review", prompt: "Refund 12.5?", kind: "approval" },
    });
    // The live bus delivered the same events, same seqs.
    expect(live.map((e) => e.seq)).toEqual(typed.map((e) => e.seq));
    const fromOffset: number[] = [];
    const offset = typed[7]?.seq ?? 0;
    for await (const e of runtime.events(paused.runId, { afterSeq: offset }))
      fromOffset.push(e.seq);
    expect(fromOffset).toEqual(typed.filter((e) => e.seq > offset).map((e) => e.seq));
  });

  it("resumes from a signed sessionState and refuses unsigned, tampered and foreign ones", async () => {
    const { agents, graph } = refundDesk();
    const key = "k".repeat(32);
    const runtime = make({ graph, runtime: agents, sessionKey: key });
    await runtime.start();
    const ctx = ExecContext.create();
    const paused = await runtime.triggerAndWait("default", {}, ctx, { timeoutSeconds: 10 });
    const session = paused.sessionState;
    expect(session?.node).toBe("review");
    expect(session?.steps).toBe(2);
    expect(session?.visits).toEqual({ intake: 1, lookup: 1 });
    const done = await runtime.wait(
      (await runtime.resume(JSON.parse(JSON.stringify(session))!, "approved", { ctx: ctx })).runId,
      { timeoutSeconds: 10 },
    );
    expect(done).toMatchObject({ status: "succeeded", output: "refunded 42" });
    expect(done.runId).not.toBe(paused.runId);
    // The paused run the sessionState came from is closed, so it cannot be answered twice.
    expect((await runtime.get(paused.runId))?.status).toBe("cancelled");

    const { sig: _sig, ...unsigned } = session as NonNullable<typeof session>;
    expect(
      (await code(runtime.resume(unsigned as SessionState, undefined, { ctx }))).message,
    ).toMatch(/unsigned/);
    const tampered = { ...session, state: { ...session?.state, total: 0.01 } };
    expect(await code(runtime.resume(tampered as SessionState, undefined, { ctx }))).toMatchObject({
      code: "INVALID_INPUT",
      message: expect.stringMatching(/signature does not match/),
    });
    const other = make({
      graph: defineGraph({
        ...{
          name: "other_desk",
          state: RefundState,
          entry: "a",
          nodes: { a: inputNode<RefundState>({ prompt: "?", writes: "decision" }) },
          edges: [["a", END]],
        },
      }),
      runtime: agents,
      sessionKey: key,
    });
    await other.start();
    const foreign = await other.triggerAndWait("default", {}, ctx, { timeoutSeconds: 10 });
    expect(
      (await code(runtime.resume(foreign.sessionState as SessionState, undefined, { ctx })))
        .message,
    ).toMatch(/belongs to graph "other_desk", not "refund_desk"/);
    const otherKey = make({ graph, runtime: agents, sessionKey: "x".repeat(32) });
    expect(
      (await code(otherKey.resume(session as SessionState, undefined, { ctx }))).message,
    ).toMatch(/another session key/);
  });

  it("keeps a generated session key in the store for every runtime on it", async () => {
    const { agents, graph } = refundDesk();
    const queue = new RunQueue({ store: new InMemoryRunStore(), name: "keys" });
    const a = make({ graph, runtime: agents, queue });
    await a.start();
    const paused = await a.triggerAndWait("default", {}, ExecContext.create(), {
      timeoutSeconds: 10,
    });
    await a.stop();
    const b = make({ graph, runtime: agents, queue });
    await b.start();
    const done = await b.wait(
      (await b.resume(paused.sessionState!, "declined", { ctx: ExecContext.create() })).runId,
      { timeoutSeconds: 10 },
    );
    expect(done.status).toBe("succeeded");
  });

  it("stops runaway loops with maxSteps and maxVisits, without retrying", async () => {
    const S = z.object({ n: z.number().default(0), log: z.array(z.number()).default([]) });
    const loop = (maxSteps: number, maxVisits?: number) =>
      defineGraph({
        name: `loop_${maxSteps}`,
        state: S,
        nodes: {
          inc: fnNode<z.output<typeof S>>(
            (s) => ({ n: s.n + 1, log: [s.n] }),
            maxVisits === undefined ? {} : { maxVisits },
          ),
        },
        edges: [["inc", (s) => (s.n >= 1000 ? END : "inc"), ["inc", END]]],
        entry: "inc",
        maxSteps,
        reducers: { log: (a: number[] | undefined, b: number[]) => [...(a ?? []), ...b] },
      });
    const agents = new InProcessRuntime();
    const r1 = make({ graph: loop(5), runtime: agents });
    await r1.start();
    const failed = await r1.triggerAndWait("default", {}, ExecContext.create(), {
      timeoutSeconds: 10,
    });
    expect(failed).toMatchObject({
      status: "failed",
      error: { code: "MAX_STEPS" },
      state: { n: 5, log: [0, 1, 2, 3, 4] },
    });
    expect(failed.error?.message).toMatch(/maxSteps \(5\)/);
    const run = await r1.get(failed.runId);
    expect(run?.path).toHaveLength(5);
    const r2 = make({ graph: loop(100, 3), runtime: agents });
    await r2.start();
    const visits = await r2.triggerAndWait("default", {}, ExecContext.create(), {
      timeoutSeconds: 10,
    });
    expect(visits).toMatchObject({ status: "failed", error: { code: "MAX_VISITS" } });
    expect(visits.error?.message).toMatch(/"inc" .* 4th time, over its maxVisits \(3\)/);
  });

  it("runs fan-out branches in parallel and joins them; an optional branch's failure is dropped", async () => {
    const S = z.object({
      id: z.string(),
      price: z.number().optional(),
      stock: z.number().optional(),
      notes: z.array(z.string()).default([]),
      quote: z.string().optional(),
    });
    type St = z.output<typeof S>;
    const running = new Set<string>();
    let overlap = false;
    const branch = (name: "price" | "stock", value: number) =>
      fnNode<St>(async () => {
        running.add(name);
        await sleep(50);
        if (running.size === 2) overlap = true;
        running.delete(name);
        return { [name]: value, notes: [name] } as Partial<St>;
      });
    const graph = defineGraph({
      name: "fan",
      state: S,
      nodes: {
        lookup: fnNode<St>(() => ({})),
        price: branch("price", 10),
        stock: branch("stock", 3),
        audit: fnNode<St>(
          () => {
            throw new Error("audit service down");
          },
          { optional: true },
        ),
        quote: fnNode<St>((s) => ({
          quote: `${s.price} x ${s.stock} (${s.notes.sort().join(",")})`,
        })),
      },
      edges: [
        ["lookup", ["price", "stock", "audit"]],
        ["price", "quote"],
        ["stock", "quote"],
        ["audit", "quote"],
        ["quote", END],
      ],
      entry: "lookup",
      reducers: { notes: (a: string[] | undefined, b: string[]) => [...(a ?? []), ...b] },
    });
    const runtime = make({ graph, runtime: new InProcessRuntime() });
    const failures: RunEvent[] = [];
    runtime.subscribe([RunEventType.NODE_FAILED], (e) => void failures.push(e));
    await runtime.start();
    const done = await runtime.triggerAndWait("default", { id: "x" }, ExecContext.create(), {
      timeoutSeconds: 10,
    });
    expect(done).toMatchObject({ status: "succeeded", state: { quote: "10 x 3 (price,stock)" } });
    expect(overlap).toBe(true);
    expect(done.path).toEqual(["lookup#1", "price#1", "stock#1", "audit#1", "quote#1"]);
    await sleep(20);
    expect(failures).toHaveLength(1);
    expect(failures[0]).toMatchObject({
      data: { node: "audit", error: expect.stringMatching(/audit service down/) },
    });
  });

  it("retries a failing node without re-running committed ones, and fails a join on a required branch", async () => {
    let lookups = 0;
    let flaky = 0;
    const S = z.object({ a: z.number().optional(), b: z.number().optional() });
    const graph = defineGraph({
      name: "retry",
      state: S,
      nodes: {
        first: fnNode(() => ({ a: ++lookups })),
        second: fnNode(() => {
          flaky += 1;
          if (flaky < 3) throw new Error(`flaky ${flaky}`);
          return { b: flaky };
        }),
      },
      edges: [
        ["first", "second"],
        ["second", END],
      ],
      entry: "first",
    });
    const runtime = make({ graph, runtime: new InProcessRuntime() });
    await runtime.start();
    const done = await runtime.triggerAndWait("default", {}, ExecContext.create(), {
      timeoutSeconds: 10,
    });
    expect(done).toMatchObject({ status: "succeeded", state: { a: 1, b: 3 } });
    expect(lookups).toBe(1);

    const required = defineGraph({
      name: "required",
      state: S,
      nodes: {
        s: fnNode(() => ({})),
        x: fnNode(() => ({ a: 1 })),
        y: fnNode(() => {
          throw new UnrecoverableError("no");
        }),
        j: fnNode(() => ({})),
      },
      edges: [
        ["s", ["x", "y"]],
        ["x", "j"],
        ["y", "j"],
        ["j", END],
      ],
      entry: "s",
    });
    const r2 = make({ graph: required, runtime: new InProcessRuntime() });
    await r2.start();
    const failed = await r2.triggerAndWait("default", {}, ExecContext.create(), {
      timeoutSeconds: 10,
    });
    expect(failed).toMatchObject({
      status: "failed",
      error: { code: "UNRECOVERABLE", message: expect.stringMatching(/Node "y" failed: no/) },
    });
  });

  it("pauses on a handler's needs_data and re-invokes it once with the answered args", async () => {
    const seen: Record<string, string>[] = [];
    const agents = new InProcessRuntime();
    agents.register("lookup_agent", async (input): Promise<PartialAgentResult> => {
      seen.push({ ...input.args });
      if (input.args.orderId === undefined)
        return { status: "needs_data", output: "Which order?", data: { missing: ["orderId"] } };
      return { output: `total of ${input.args.orderId}`, data: { total: 7 } };
    });
    const S = z.object({ total: z.number().optional(), lookup: z.string().optional() });
    const graph = defineGraph({
      name: "needs",
      state: S,
      nodes: { lookup: agentNode("lookup_agent") },
      edges: [["lookup", END]],
      entry: "lookup",
    });
    const runtime = make({ graph, runtime: agents });
    await runtime.start();
    const paused = await runtime.triggerAndWait("default", {}, ExecContext.create(), {
      timeoutSeconds: 10,
    });
    expect(paused).toMatchObject({
      status: "paused",
      pausedAt: "lookup",
      pause: { kind: "needs_data", prompt: "Which order?", data: { missing: ["orderId"] } },
    });
    expect((await code(runtime.resume(paused.runId, { orderId: "9" }))).message).toMatch(
      /answer \{ args/,
    );
    await runtime.resume(paused.runId, { args: { orderId: "9" } });
    const done = await runtime.wait(paused.runId, { timeoutSeconds: 10 });
    expect(done).toMatchObject({ status: "succeeded", state: { total: 7, lookup: "total of 9" } });
    expect(seen).toEqual([{}, { orderId: "9" }]);
  });

  it("cancels mid-node: the node's ctx.signal aborts and the execution ends cancelled", async () => {
    let aborted = false;
    let started!: () => void;
    const began = new Promise<void>((r) => (started = r));
    const graph = defineGraph({
      name: "slow",
      state: z.object({ done: z.boolean().optional() }),
      nodes: {
        wait: fnNode(async (_s, ctx) => {
          started();
          await new Promise<void>((resolve) =>
            ctx.signal.addEventListener("abort", () => resolve()),
          );
          aborted = true;
          return { done: true };
        }),
      },
      edges: [["wait", END]],
      entry: "wait",
    });
    const runtime = make({ graph, runtime: new InProcessRuntime() });
    await runtime.start();
    const id = await runtime.trigger("default", {});
    await began;
    await runtime.cancel(id, { reason: "user left" });
    const end = await runtime.wait(id, { timeoutSeconds: 10 });
    expect(end.status).toBe("cancelled");
    expect(aborted).toBe(true);
  });

  it("cancels mid-node: an agent node's handler sees its ctx.signal abort", async () => {
    let aborted = false;
    let started!: () => void;
    const began = new Promise<void>((r) => (started = r));
    const agents = new InProcessRuntime({ timeoutSeconds: 60 });
    agents.register("slow_agent", async (_input, ctx) => {
      started();
      await new Promise<void>((resolve) => ctx.signal.addEventListener("abort", () => resolve()));
      aborted = true;
      return "too late";
    });
    const graph = defineGraph({
      name: "slow_agent_graph",
      state: z.object({ out: z.string().optional() }),
      nodes: { call: agentNode("slow_agent", { writes: "out" }) },
      edges: [["call", END]],
      entry: "call",
    });
    const runtime = make({ graph, runtime: agents });
    await runtime.start();
    const id = await runtime.trigger("default", {});
    await began;
    await runtime.cancel(id);
    expect((await runtime.wait(id, { timeoutSeconds: 10 })).status).toBe("cancelled");
    expect(aborted).toBe(true);
  });

  it("runs on an existing Runner shared with plain runs", async () => {
    const shared = new InProcessRuntime();
    shared.register("plain", async () => "plain run");
    shared.register("echo_agent", async (input) => `echo ${input.message}`);
    const queue = new RunQueue({ store: new InMemoryRunStore(), name: "shared" });
    const runner = new Runner({
      queue,
      runtime: shared,
      concurrency: 2,
      leaseSeconds: 2,
      heartbeatSeconds: 0.1,
    });
    const graph = defineGraph({
      name: "on_shared",
      state: z.object({ out: z.string().optional() }),
      nodes: { call: agentNode("echo_agent", { writes: "out", input: () => ({ message: "hi" }) }) },
      edges: [["call", END]],
      entry: "call",
    });
    const runtime = make({ graph, runtime: shared, queue, runner });
    expect(shared.handlerNames()).toContain("on_shared");
    await runner.start();
    try {
      const done = await runtime.triggerAndWait("default", {}, ExecContext.create(), {
        timeoutSeconds: 10,
      });
      expect(done).toMatchObject({ status: "succeeded", state: { out: "echo hi" } });
      const plain = await queue.enqueue({
        handler: "plain",
        input: { message: "x" },
        ctx: ExecContext.create(),
      });
      expect((await queue.wait(plain.id, { timeoutSeconds: 10 })).result?.output).toBe("plain run");
      expect(runtime.getEntryPoints()[0]?.queue).toBe("shared");
      expect(() =>
        make({
          graph,
          runtime: {
            invoke: async () => ({}),
            handlerNames: () => [],
            invokeChain: async () => ({}),
            delegate: async () => ({}),
            close: async () => undefined,
          } as never,
          queue,
          runner,
        }),
      ).toThrow(/InProcessRuntime that runner executes/);
    } finally {
      await runner.stop({ graceSeconds: 0 });
    }
  });

  it("records a graph.node span per visit under the run's span, with the handler's span beneath", async () => {
    const agents = new InProcessRuntime();
    let spans: {
      name: string;
      id: string;
      parent: string | null;
      attrs: Record<string, unknown>;
    }[] = [];
    agents.register("probe", async (_i, ctx) => {
      spans = ctx.spans.map((s) => ({
        name: s.name,
        id: s.id,
        parent: s.parentId,
        attrs: { ...s.attributes },
      }));
      return "ok";
    });
    const graph = defineGraph({
      name: "spans",
      state: z.object({ probe: z.string().optional() }),
      nodes: { first: fnNode(() => ({})), probe: agentNode("probe") },
      edges: [
        ["first", "probe"],
        ["probe", END],
      ],
      entry: "first",
    });
    const runtime = make({ graph, runtime: agents });
    await runtime.start();
    await runtime.triggerAndWait("default", {}, ExecContext.create(), { timeoutSeconds: 10 });
    const byId = new Map(spans.map((s) => [s.id, s]));
    const handler = spans.find((s) => s.name === "runtime.invoke" && s.attrs.handler === "probe");
    const node = byId.get(handler?.parent ?? "");
    expect(node).toMatchObject({ name: "graph.node", attrs: { id: "probe", visit: 1 } });
    const run = byId.get(node?.parent ?? "");
    expect(run).toMatchObject({ name: "runtime.invoke", attrs: { handler: "spans" } });
    expect(spans.filter((s) => s.name === "graph.node").map((s) => s.attrs.id)).toEqual([
      "first",
      "probe",
    ]);
  });

  it("streams output.delta with its node and records tool calls through the policy", async () => {
    const tools = new FunctionToolManager();
    tools.register(
      defineTool({
        name: "lookup_order",
        description: "order",
        parameters: z.object({ id: z.string() }),
        run: ({ id }) => ({ total: id.length }),
      }),
    );
    const graph = defineGraph({
      name: "talk",
      state: z.object({ total: z.number().optional(), denied: z.string().optional() }),
      nodes: {
        talk: fnNode(async (_s, ctx) => {
          await ctx.emit("looking ");
          await ctx.emit("up");
          const r = await ctx.kit.tools.call("lookup_order", { id: "abc" });
          const d = await ctx.kit.tools.call("refund", {});
          return { total: (r.output as { total: number }).total, denied: d.status };
        }),
      },
      edges: [["talk", END]],
      entry: "talk",
    });
    const policy = {
      evaluate: async (action: { kind?: string; name?: string; checkpoint: string }) =>
        action.name === "refund"
          ? {
              effect: "deny" as const,
              checkpoint: action.checkpoint as never,
              code: "POLICY_DENIED" as const,
              reason: "no refunds",
              rule: null,
            }
          : {
              effect: "allow" as const,
              checkpoint: action.checkpoint as never,
              code: null,
              reason: "",
              rule: null,
            },
      charge: async () => undefined,
    };
    const runtime = make({ graph, runtime: new InProcessRuntime(), tools, policy });
    const seen: RunEvent[] = [];
    runtime.subscribe(
      [RunEventType.OUTPUT_DELTA, RunEventType.TOOL_STARTED, RunEventType.TOOL_COMPLETED],
      (e) => void seen.push(e),
    );
    await runtime.start();
    const done = await runtime.triggerAndWait("default", {}, ExecContext.create(), {
      timeoutSeconds: 10,
    });
    expect(done.state).toEqual({ total: 3, denied: "permission_denied" });
    await sleep(20);
    expect(seen.map((e) => [e.type, e.data.node, e.data.chunk ?? e.data.tool ?? null])).toEqual([
      [RunEventType.OUTPUT_DELTA, "talk", "looking "],
      [RunEventType.OUTPUT_DELTA, "talk", "up"],
      [RunEventType.TOOL_STARTED, "talk", "lookup_order"],
      [RunEventType.TOOL_COMPLETED, "talk", "lookup_order"],
      [RunEventType.TOOL_STARTED, "talk", "refund"],
      [RunEventType.TOOL_COMPLETED, "talk", "refund"],
    ]);
  });

  it("checks an agent node's handler against the execution's permissions and the policy before invoking it", async () => {
    const invoked: string[] = [];
    const agents = new InProcessRuntime();
    agents.register("secret_agent", async () => {
      invoked.push("secret");
      return "leaked";
    });
    const S = z.object({ out: z.string().optional() });
    const graph = defineGraph({
      name: "guarded",
      state: S,
      nodes: { call: agentNode("secret_agent", { writes: "out" }) },
      edges: [["call", END]],
      entry: "call",
    });
    const runtime = make({ graph, runtime: agents });
    await runtime.start();
    const narrow = ExecContext.create({ permissions: { allowedAgents: ["guarded"] } });
    const denied = await runtime.triggerAndWait("default", {}, narrow, { timeoutSeconds: 10 });
    expect(denied).toMatchObject({ status: "failed", error: { code: "PERMISSION_DENIED" } });
    expect(denied.error?.message).toMatch(/do not allow agent "secret_agent"/);
    // Without the graph's own agent the trigger is refused before anything is enqueued.
    const none = await rejection(
      runtime.triggerAndWait(
        "default",
        {},
        ExecContext.create({ permissions: { allowedAgents: [] } }),
        {
          timeoutSeconds: 10,
        },
      ),
    );
    expect(none.code).toBe("PERMISSION_DENIED");
    expect(none.message).toMatch(/do not allow graph "guarded"/);
    const policed = make({
      graph,
      runtime: agents,
      policy: {
        evaluate: async (action: { checkpoint: string; name?: string }) => {
          if (action.name === "secret_agent") throw new Error("policy store down");
          return {
            effect: "allow" as const,
            checkpoint: action.checkpoint as never,
            code: null,
            reason: "",
            rule: null,
          };
        },
        charge: async () => undefined,
      },
    });
    await policed.start();
    const refused = await policed.triggerAndWait("default", {}, ExecContext.create(), {
      timeoutSeconds: 10,
    });
    expect(refused).toMatchObject({ status: "failed", error: { code: "POLICY_DENIED" } });
    expect(invoked).toEqual([]);
  });

  it("refuses a bad start state and an unknown entry point with typed errors", async () => {
    const { agents, graph } = refundDesk();
    const runtime = make({ graph, runtime: agents });
    expect(await code(runtime.trigger("default", { total: "a lot" } as never))).toMatchObject({
      code: "INVALID_INPUT",
      message: expect.stringMatching(/input\.total/),
    });
    expect(await code(runtime.trigger("nope", {}))).toMatchObject({
      code: "NOT_FOUND",
      message: expect.stringMatching(/Unknown entry point "nope"/),
    });
    expect(
      () =>
        new GraphHost({
          graph,
          runtime: agents,
          queue: new RunQueue({ store: new InMemoryRunStore() }),
          entryPoints: [{ id: "x", entryNode: "nowhere" }],
        }),
    ).toThrow(/entryNode "nowhere"/);
  });

  it("needs neither a queue nor a runtime for a graph without agent nodes, and asks for a runtime with them", async () => {
    const Count = z.object({ n: z.number(), ok: z.string().optional() });
    type Count = z.output<typeof Count>;
    const graph = defineGraph({
      name: "plain",
      state: Count,
      nodes: {
        add: fnNode<Count>((s) => ({ n: s.n + 1 })),
        ask: inputNode<Count>({ prompt: "ok?", writes: "ok" }),
      },
      edges: [
        ["add", "ask"],
        ["ask", END],
      ],
      entry: "add",
    });
    const host = new GraphHost({ graph });
    runtimes.push(host);
    await host.start();
    const paused = await host.triggerAndWait("default", { n: 1 });
    expect(paused).toMatchObject({ status: "paused", state: { n: 2 } });
    await host.resume(paused.runId, "yes");
    expect(await host.wait(paused.runId)).toMatchObject({
      status: "succeeded",
      state: { ok: "yes" },
    });
    const { graph: withAgents } = refundDesk();
    expect(() => new GraphHost({ graph: withAgents })).toThrow(
      /options\.runtime: graph "refund_desk" has agent nodes \(.*\)/,
    );
  });
});
