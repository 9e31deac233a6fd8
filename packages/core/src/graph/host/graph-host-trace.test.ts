import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { ExecContext } from "../../context/exec-context.js";
import { NervaError } from "../../errors.js";
import { InMemoryRunStore } from "../../runs/memory/in-memory-store.js";
import { RunQueue } from "../../runs/run-queue.js";
import { InProcessRuntime } from "../../runtime/in-process-runtime.js";
import { MemoryTraceSink } from "../../tracing/memory-sink.js";
import { END, GraphHost, agentNode, defineGraph, fnNode } from "../index.js";

// A graph run's spans reach the trace sink given to the GraphHost (issue 13): the runners it
// builds per entry point get it, so `run`, `runtime.invoke` and `graph.node` spans are exported
// from the process executing the graph, in the trigger's trace.

const State = z.object({ orderId: z.string().optional(), answer: z.string().optional() });
type State = z.output<typeof State>;

function desk() {
  const agents = new InProcessRuntime();
  agents.register("answer_agent", (input, ctx) =>
    ctx.span("lookup", async () => `answer for ${input.args.orderId}`),
  );
  const graph = defineGraph({
    name: "desk",
    state: State,
    nodes: {
      intake: fnNode<State>(async () => ({ orderId: "42" })),
      answer: agentNode<State>("answer_agent", {
        input: (s) => ({ message: "answer", args: { orderId: s.orderId ?? "" } }),
        writes: "answer",
      }),
    },
    edges: [
      ["intake", "answer"],
      ["answer", END],
    ],
    entry: "intake",
    output: (s) => s.answer ?? "",
  });
  return { agents, graph };
}

const runtimes: GraphHost[] = [];
afterEach(async () => {
  for (const r of runtimes.splice(0)) await r.stop({ graceSeconds: 0 });
});

describe("GraphHost traceSink", () => {
  it("sends every span of a graph run to the sink, in the trigger's trace, nested", async () => {
    const { agents, graph } = desk();
    const sink = new MemoryTraceSink();
    const runtime = new GraphHost({
      graph,
      runtime: agents,
      queue: new RunQueue({ store: new InMemoryRunStore(), name: "t" }),
      entryPoints: [
        { id: "default", trigger: { type: "manual" } },
        { id: "second", trigger: { type: "manual" } },
      ],
      runner: { traceSink: sink },
    });
    runtimes.push(runtime);
    await runtime.start();
    const ctx = ExecContext.create({ userId: "u1" });
    const done = await runtime.triggerAndWait("default", {}, ctx, { timeoutSeconds: 10 });
    expect(done).toMatchObject({ status: "succeeded", output: "answer for 42" });

    const spans = sink.trace(ctx.traceId);
    const names = spans.map((s) => s.name);
    expect(names.filter((n) => n === "graph.node")).toHaveLength(2);
    expect(names).toEqual(expect.arrayContaining(["run", "runtime.invoke", "lookup"]));
    // The run nests under the trigger's runs.enqueue span (on the caller's context, no sink).
    const run = spans.find((s) => s.name === "run")!;
    const enqueue = ctx.spans.find((s) => s.name === "runs.enqueue")!;
    expect(run.parentId).toBe(enqueue.id);
    // graph.node spans under the execution's runtime.invoke span, under the run span.
    const byId = new Map(spans.map((s) => [s.id, s]));
    const answer = spans.find((s) => s.name === "graph.node" && s.attributes.id === "answer")!;
    const execution = byId.get(answer.parentId!)!;
    expect(execution.name).toBe("runtime.invoke");
    expect(execution.parentId).toBe(run.id);
    // The agent's own spans nest under its node.
    const lookup = spans.find((s) => s.name === "lookup")!;
    const agentInvoke = byId.get(lookup.parentId!)!;
    expect(agentInvoke).toMatchObject({ name: "runtime.invoke", parentId: answer.id });
    expect(spans.every((s) => s.ended && s.userId === "u1")).toBe(true);

    // The other entry point's runner reports to the same sink.
    const other = await runtime.triggerAndWait("second", {}, ExecContext.create(), {
      timeoutSeconds: 10,
    });
    expect(other.status).toBe("succeeded");
    expect(sink.spans.filter((s) => s.name === "run")).toHaveLength(2);
  });

  it("refuses a traceSink that is not one, and one beside the runner options", () => {
    const { agents, graph } = desk();
    const queue = new RunQueue({ store: new InMemoryRunStore(), name: "t" });
    const bad = () =>
      new GraphHost({ graph, runtime: agents, queue, runner: { traceSink: {} as never } });
    expect(bad).toThrow(NervaError);
    expect(bad).toThrow(/options\.runner.*traceSink|traceSink/s);
    // The trace sink is a runner's option: the host takes it only inside `runner`, so a shared
    // Runner keeps the one it was given.
    const beside = () =>
      new GraphHost({ graph, runtime: agents, queue, traceSink: new MemoryTraceSink() } as never);
    expect(beside).toThrow(/traceSink/);
  });
});
