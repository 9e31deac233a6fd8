// The model node: a graph node that asks a model through @nerva/ai-sdk, on a durable run over a
// real SQLite file, against the fake OpenAI-compatible server on 127.0.0.1.
import "./no-network.test-support.js";
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import {
  END,
  RunEventType,
  ExecContext,
  FunctionToolManager,
  InProcessRuntime,
  RunQueue,
  GraphHost,
  defineGraph,
  defineTool,
  fnNode,
  type RunEvent,
  type GraphHostOptions,
  type RunQueueOptions,
} from "@nerva/core";
import { MemoryTraceSink } from "@nerva/core/tracing";
import { type PolicyEngine } from "@nerva/core/policy";
import { SqliteRunStore } from "@nerva/core/sqlite";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { createModel, modelNode, type NervaModel } from "./index.js";
import { askOnceGraph } from "./model-node-graph.test-support.js";
import { FakeOpenAIServer } from "./testing/index.js";

const dir = mkdtempSync(join(tmpdir(), "nerva-model-node-"));
let upstream: FakeOpenAIServer;
let model: NervaModel;
let dbs = 0;
const runtimes: GraphHost[] = [];
const stores: SqliteRunStore[] = [];

beforeAll(async () => {
  upstream = await FakeOpenAIServer.start();
  model = createModel(
    createOpenAICompatible({ name: "fake", baseURL: upstream.url, includeUsage: true }).chatModel(
      "gpt-4o-mini",
    ),
  );
});
afterEach(async () => {
  for (const r of runtimes.splice(0)) await r.stop({ graceSeconds: 0 });
  for (const s of stores.splice(0)) await s.close();
});
afterAll(async () => {
  await upstream.close();
  rmSync(dir, { recursive: true, force: true });
});

/** A started graph runtime over a fresh SQLite file. */
async function start(
  options: Omit<GraphHostOptions, "queue">,
  queueOptions: Omit<RunQueueOptions, "store" | "name"> = {},
): Promise<GraphHost> {
  const store = new SqliteRunStore({ path: join(dir, `runs-${++dbs}.db`) });
  stores.push(store);
  const queue = new RunQueue({ store, name: "g", ...queueOptions });
  const runtime = new GraphHost({ ...options, queue });
  runtimes.push(runtime);
  await runtime.start();
  return runtime;
}

const QA = z.object({ question: z.string(), answer: z.string().optional() });
type QA = z.output<typeof QA>;

/** A policy that refuses what `refuse` matches with `code`, and allows the rest; `seen` logs `kind name`. */
function policy(
  refuse: (a: { kind?: string; name?: string }) => boolean,
  code: string,
  seen: string[] = [],
) {
  return {
    evaluate: async (action: { kind?: string; name?: string; checkpoint: string }) => {
      seen.push(`${action.kind} ${action.name}`);
      const refused = refuse(action);
      return {
        effect: refused ? ("deny" as const) : ("allow" as const),
        checkpoint: action.checkpoint as never,
        code: (refused ? code : null) as never,
        reason: refused ? `no ${action.name}` : "",
        rule: null,
      };
    },
    charge: async () => undefined,
  } as unknown as PolicyEngine;
}

describe("modelNode", () => {
  it("asks the model from the state it reads, streams the answer as output.delta and writes it; its chat span sits under graph.node", async () => {
    const sink = new MemoryTraceSink();
    const graph = defineGraph({
      name: "qa",
      state: QA,
      nodes: {
        ask: modelNode<QA>({
          model,
          system: "Answer briefly.",
          prompt: (s) => `Q: ${s.question}`,
          reads: ["question"],
          writes: "answer",
        }),
      },
      edges: [["ask", END]],
      entry: "ask",
    });
    const runtime = await start({
      graph,
      runtime: new InProcessRuntime(),
      runner: { traceSink: sink },
    });
    const deltas: RunEvent[] = [];
    runtime.subscribe([RunEventType.OUTPUT_DELTA], (e) => void deltas.push(e));
    upstream.enqueue({
      chunks: ["Fjords ", "are ", "deep."],
      usage: { promptTokens: 12, completionTokens: 3 },
    });
    const before = upstream.requests.length;
    const done = await runtime.triggerAndWait(
      "default",
      { question: "what are fjords?" },
      ExecContext.create(),
      { timeoutSeconds: 10 },
    );
    expect(done).toMatchObject({
      status: "succeeded",
      state: { question: "what are fjords?", answer: "Fjords are deep." },
      path: ["ask#1"],
    });
    expect(done.usage).toMatchObject({ promptTokens: 12, completionTokens: 3 });
    const sent = upstream.requests.slice(before);
    expect(sent).toHaveLength(1);
    expect(sent[0]!.body["messages"]).toEqual([
      { role: "system", content: "Answer briefly." },
      { role: "user", content: "Q: what are fjords?" },
    ]);
    await new Promise((r) => setTimeout(r, 20));
    expect(deltas.map((e) => [e.data.node, e.data.chunk])).toEqual([
      ["ask", "Fjords "],
      ["ask", "are "],
      ["ask", "deep."],
    ]);
    const spans = sink.spans;
    const chat = spans.find((s) => s.name === "chat");
    const node = spans.find((s) => s.name === "graph.node" && s.attributes.id === "ask");
    expect(chat).toBeDefined();
    expect(node).toBeDefined();
    expect(chat!.parentId).toBe(node!.id);
    expect(chat!.usage).toMatchObject({ promptTokens: 12, completionTokens: 3 });
  });

  it("offers the runtime's tools through the node's kit: permissions and the policy apply, each call is a tool.started and tool.completed event", async () => {
    const ran: string[] = [];
    const tools = new FunctionToolManager();
    for (const name of ["lookup_order", "refund"]) {
      tools.register(
        defineTool({
          name,
          description: name,
          parameters: z.object({ id: z.string() }),
          run: ({ id }) => {
            ran.push(`${name}:${id}`);
            return { total: 42 };
          },
        }),
      );
    }
    const graph = defineGraph({
      name: "desk",
      state: QA,
      nodes: { ask: modelNode<QA>({ model, prompt: (s) => s.question, writes: "answer" }) },
      edges: [["ask", END]],
      entry: "ask",
    });
    const runtime = await start({
      graph,
      runtime: new InProcessRuntime(),
      tools,
      policy: policy((a) => a.name === "refund", "POLICY_DENIED"),
    });
    const events: RunEvent[] = [];
    runtime.subscribe(
      [RunEventType.TOOL_STARTED, RunEventType.TOOL_COMPLETED],
      (e) => void events.push(e),
    );
    upstream.enqueue(
      {
        toolCalls: [
          { id: "c1", name: "lookup_order", arguments: { id: "7" } },
          { id: "c2", name: "refund", arguments: { id: "7" } },
        ],
      },
      { text: "Order 7 is 42; I may not refund it." },
    );
    const before = upstream.requests.length;
    const done = await runtime.triggerAndWait(
      "default",
      { question: "refund order 7" },
      ExecContext.create(),
      { timeoutSeconds: 10 },
    );
    expect(done.status).toBe("succeeded");
    expect(done.state["answer"]).toBe("Order 7 is 42; I may not refund it.");
    expect(ran).toEqual(["lookup_order:7"]);
    const sent = upstream.requests.slice(before);
    expect(sent.map((r) => (r.body["tools"] as { function: { name: string } }[]).length)).toEqual([
      2, 2,
    ]);
    const toolAnswers = (sent[1]!.body["messages"] as { role: string; content: string }[])
      .filter((m) => m.role === "tool")
      .map((m) => JSON.parse(m.content) as unknown);
    expect(toolAnswers).toEqual([
      { total: 42 },
      { status: "permission_denied", error: expect.stringContaining("no refund") },
    ]);
    await new Promise((r) => setTimeout(r, 20));
    // The SDK runs one step's tool calls concurrently: each tool starts before it completes.
    for (const tool of ["lookup_order", "refund"]) {
      expect(events.filter((e) => e.data.tool === tool).map((e) => [e.type, e.data.node])).toEqual([
        [RunEventType.TOOL_STARTED, "ask"],
        [RunEventType.TOOL_COMPLETED, "ask"],
      ]);
    }
    expect(events).toHaveLength(4);
  });

  it("asks the policy before each model step: a refusal fails the node with the policy's code and sends nothing", async () => {
    const asked: string[] = [];
    const graph = defineGraph({
      name: "broke",
      state: QA,
      nodes: { ask: modelNode<QA>({ model, prompt: (s) => s.question, tools: false }) },
      edges: [["ask", END]],
      entry: "ask",
    });
    const runtime = await start(
      {
        graph,
        runtime: new InProcessRuntime(),
        policy: policy((a) => a.kind === "model", "BUDGET_EXCEEDED", asked),
      },
      { retry: { maxAttempts: 1 } }, // (a spent budget may refill: by default the run would retry)
    );
    const before = upstream.requests.length;
    const done = await runtime.triggerAndWait("default", { question: "hi" }, ExecContext.create(), {
      timeoutSeconds: 10,
    });
    expect(done.status).toBe("failed");
    expect(done.error?.code).toBe("BUDGET_EXCEEDED");
    expect(upstream.requests.length).toBe(before);
    // The action the policy is asked about names the model as provider/modelId.
    expect(asked).toContain(`model ${model.id}`);
    expect(model.id).toMatch(/^[^/]+\/gpt-4o-mini$/);
  });

  it("writes a structured answer (schema) and the node id is the default key", async () => {
    const S = z.object({
      text: z.string(),
      triage: z.object({ urgent: z.boolean(), team: z.string() }).optional(),
    });
    const graph = defineGraph({
      name: "triage",
      state: S,
      nodes: {
        triage: modelNode<z.output<typeof S>>({
          model,
          tools: false,
          prompt: (s) => s.text,
          schema: z.object({ urgent: z.boolean(), team: z.string() }),
        }),
      },
      edges: [["triage", END]],
      entry: "triage",
    });
    const runtime = await start({ graph, runtime: new InProcessRuntime() });
    upstream.enqueue({ text: JSON.stringify({ urgent: true, team: "billing" }) });
    const done = await runtime.triggerAndWait(
      "default",
      { text: "I was charged twice!" },
      ExecContext.create(),
      { timeoutSeconds: 10 },
    );
    expect(done.status).toBe("succeeded");
    expect(done.state["triage"]).toEqual({ urgent: true, team: "billing" });
  });

  it("output maps the answer to any keys of the state", async () => {
    const S = z.object({
      q: z.string(),
      answer: z.string().optional(),
      words: z.number().optional(),
    });
    type S = z.output<typeof S>;
    const graph = defineGraph({
      name: "mapped",
      state: S,
      nodes: {
        ask: modelNode<S>({
          model,
          tools: false,
          prompt: (s) => s.q,
          writes: "answer",
          output: (a) => ({ answer: a.text, words: a.text.split(" ").length }),
        }),
      },
      edges: [["ask", END]],
      entry: "ask",
    });
    const runtime = await start({ graph, runtime: new InProcessRuntime() });
    upstream.enqueue({ text: "three short words" });
    const done = await runtime.triggerAndWait("default", { q: "?" }, ExecContext.create(), {
      timeoutSeconds: 10,
    });
    expect(done.state).toEqual({ q: "?", answer: "three short words", words: 3 });
  });

  it("refuses bad options with INVALID_OPTIONS naming the field", () => {
    expect(() => modelNode({ model, prompt: "hi" as never })).toThrow(
      expect.objectContaining({
        code: "INVALID_OPTIONS",
        message: expect.stringContaining("prompt"),
      }),
    );
    expect(() => modelNode({ model: {} as never, prompt: () => "hi" })).toThrow(
      expect.objectContaining({
        code: "INVALID_OPTIONS",
        message: expect.stringContaining("model"),
      }),
    );
    expect(() => modelNode({ model, prompt: () => "hi", maxSteps: 0 })).toThrow(
      expect.objectContaining({
        code: "INVALID_OPTIONS",
        message: expect.stringContaining("maxSteps"),
      }),
    );
    expect(() => modelNode({ model, prompt: () => "hi", tool: true } as never)).toThrow(
      expect.objectContaining({ code: "INVALID_OPTIONS" }),
    );
  });

  it("runs in a graph with other nodes: a function node's state feeds the prompt", async () => {
    const S = z.object({
      id: z.string(),
      total: z.number().optional(),
      note: z.string().optional(),
    });
    const graph = defineGraph({
      name: "mixed",
      state: S,
      nodes: {
        lookup: fnNode<z.output<typeof S>>(() => ({ total: 99 })),
        note: modelNode<z.output<typeof S>>({
          model,
          tools: false,
          prompt: (s) => `Order ${s.id} costs ${s.total}.`,
          reads: ["id", "total"],
        }),
      },
      edges: [
        ["lookup", "note"],
        ["note", END],
      ],
      entry: "lookup",
    });
    const runtime = await start({ graph, runtime: new InProcessRuntime() });
    const done = await runtime.triggerAndWait("default", { id: "5" }, ExecContext.create(), {
      timeoutSeconds: 10,
    });
    expect(done.state).toEqual({ id: "5", total: 99, note: "You said: Order 5 costs 99." });
  });
});

describe("modelNode across a worker crash", () => {
  const tsx = pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href;
  const entry = join(import.meta.dirname, "model-node-worker.test-support.ts");
  const spawnWorker = (config: Record<string, unknown>) => {
    const child: ChildProcess = spawn(process.execPath, ["--import", tsx, entry], {
      env: { ...process.env, NERVA_TEST_CONFIG: JSON.stringify(config) },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let err = "";
    child.stderr?.on("data", (d: Buffer) => (err += d.toString()));
    const exited = new Promise<void>((resolve) => child.on("exit", () => resolve()));
    const ready = new Promise<void>((resolve, reject) => {
      let out = "";
      child.stdout?.on("data", (d: Buffer) => {
        out += d.toString();
        if (out.includes("ready\n")) resolve();
      });
      void exited.then(() => reject(new Error(`worker exited before ready: ${err}`)));
    });
    return { child, ready, exited };
  };

  it(
    "a worker SIGKILLed after the model answered does not call the model again: the next worker commits that answer",
    { timeout: 60_000 },
    async () => {
      const path = join(dir, "crash.db");
      const log = join(dir, "crash.jsonl");
      writeFileSync(log, "");
      const store = new SqliteRunStore({ path });
      stores.push(store);
      const client = new GraphHost({
        graph: askOnceGraph(model, () => undefined), // this process only triggers and waits
        runtime: new InProcessRuntime(),
        queue: new RunQueue({ store, name: "model-node" }),
      });
      const before = upstream.requests.length;
      upstream.enqueue({ text: "Only once." });
      const id = await client.trigger("default", { question: "say it once" });
      const answered = () =>
        readFileSync(log, "utf8")
          .split("\n")
          .filter((l) => l.includes('"answered"')).length;

      const first = spawnWorker({ path, baseURL: upstream.url, log, hang: true });
      await first.ready;
      for (let i = 0; i < 200 && answered() === 0; i++) await new Promise((r) => setTimeout(r, 50));
      expect(answered()).toBe(1);
      first.child.kill("SIGKILL");
      await first.exited;

      const second = spawnWorker({ path, baseURL: upstream.url, log, hang: false });
      await second.ready;
      try {
        const done = await client.wait(id, { timeoutSeconds: 30 });
        expect(done).toMatchObject({
          status: "succeeded",
          state: { question: "say it once", answer: "Only once." },
        });
        expect(answered()).toBe(2); // the node ran again on the second worker...
        expect(upstream.requests.length - before).toBe(1); // ...but the model was asked once
      } finally {
        second.child.kill("SIGTERM");
        await second.exited;
      }
    },
  );
});
