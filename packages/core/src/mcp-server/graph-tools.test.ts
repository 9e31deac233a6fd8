// Graphs served as MCP tools, driven by the SDK's own Client: a call runs the graph with its
// arguments as the start state and reports its node events as progress; a paused run answers what
// it waits for; a call made as a task is its run, and another replica on the same run store (a
// second handler and host on the same SQLite file) reports on it and cancels it, for its user only.
import { once } from "node:events";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CallToolResultSchema } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { ExecContext } from "../context/exec-context.js";
import { END, defineGraph, fnNode, inputNode } from "../graph/index.js";
import { GraphHost } from "../graph/host/graph-host.js";
import { RunQueue } from "../runs/run-queue.js";
import { SqliteRunStore } from "../runs/sqlite/sqlite-run-store.js";
import { InProcessRuntime } from "../runtime/in-process-runtime.js";
import { createMcpHandler, type McpHandler } from "./index.js";

const dir = mkdtempSync(join(tmpdir(), "nerva-mcp-graphs-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const State = z.object({
  orderId: z.string().describe("The order to refund"),
  total: z.number().optional(),
  decision: z.enum(["approve", "deny"]).optional(),
  done: z.string().optional(),
});
type State = z.output<typeof State>;
const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((r) => {
    const t = setTimeout(r, ms);
    signal?.addEventListener("abort", () => (clearTimeout(t), r()), { once: true });
  });

const lookup = defineGraph({
  name: "order_lookup",
  state: State,
  nodes: {
    load: fnNode<State>(async (s) => ({ total: s.orderId === "slow" ? 1 : 42 })),
    wait: fnNode<State>(async (s, ctx) => {
      if (s.orderId === "slow") await sleep(10_000, ctx.signal);
      return {};
    }),
    finish: fnNode<State>(async (s) => ({ done: `order ${s.orderId}: ${s.total}` })),
  },
  edges: [
    ["load", "wait"],
    ["wait", "finish"],
    ["finish", END],
  ],
  entry: "load",
  output: (s) => s.done ?? null,
});

const refund = defineGraph({
  name: "refund_review",
  state: State,
  nodes: {
    review: inputNode<State>({ prompt: (s) => `Refund ${s.orderId}?`, writes: "decision" }),
  },
  edges: [["review", END]],
  entry: "review",
  output: (s) => s.decision ?? null,
});

const path = join(dir, "runs.db");
const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

/** One replica: hosts of both graphs on the shared SQLite file, and its MCP endpoint. */
async function replica(): Promise<URL> {
  const store = new SqliteRunStore({ path });
  // One queue per graph: a host's workers run only its own graph.
  const hosts = [lookup, refund].map(
    (graph) =>
      new GraphHost({
        graph,
        runtime: new InProcessRuntime(),
        queue: new RunQueue({ store, name: graph.name }),
      }),
  );
  for (const h of hosts) await h.start();
  const mcp: McpHandler = createMcpHandler({
    runtime: new InProcessRuntime(),
    graphs: [
      { name: "lookup_order", host: hosts[0]!, description: "Looks an order up" },
      { name: "review_refund", host: hosts[1]! },
    ],
  });
  const server: Server = createServer((req, res) => {
    const ctx = ExecContext.create({ userId: String(req.headers["x-test-user"]) });
    mcp.handle(req, res, ctx).catch(() => res.writeHead(500).end());
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  closers.push(async () => {
    await mcp.close();
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
    for (const h of hosts) await h.stop({ graceSeconds: 0 });
    await store.close();
  });
  return new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`);
}

async function connect(url: URL, user: string): Promise<Client> {
  const client = new Client({ name: "t", version: "1" });
  await client.connect(
    new StreamableHTTPClientTransport(url, { requestInit: { headers: { "x-test-user": user } } }),
  );
  closers.push(() => client.close());
  return client;
}

describe("graphs as MCP tools", () => {
  it("lists a graph with its start state's schema, runs it, and reports its nodes as progress", async () => {
    const client = await connect(await replica(), "ada");
    const { tools } = await client.listTools();
    const tool = tools.find((t) => t.name === "lookup_order");
    expect(tool).toMatchObject({
      description: "Looks an order up",
      inputSchema: { type: "object", properties: { orderId: { type: "string" } } },
      execution: { taskSupport: "optional" },
    });
    const progress: string[] = [];
    const result = await client.callTool(
      { name: "lookup_order", arguments: { orderId: "7" } },
      undefined,
      { onprogress: (p) => void progress.push(p.message ?? "") },
    );
    expect(result).toMatchObject({
      content: [{ type: "text", text: "order 7: 42" }],
      structuredContent: {
        status: "succeeded",
        handler: "lookup_order",
        data: { output: "order 7: 42" },
      },
      isError: false,
    });
    expect(progress).toEqual(
      expect.arrayContaining(["node.started load", "node.completed load", "node.completed finish"]),
    );
  });

  it("answers a paused run with what it waits for, and a bad start state with INVALID_INPUT", async () => {
    const client = await connect(await replica(), "ada");
    const paused = await client.callTool({ name: "review_refund", arguments: { orderId: "9" } });
    expect(paused).toMatchObject({
      content: [{ text: 'Waiting for input at "review": Refund 9?' }],
      structuredContent: { status: "paused", data: { pausedAt: "review", prompt: "Refund 9?" } },
      isError: false,
    });
    const bad = await client.callTool({ name: "lookup_order", arguments: { orderId: 5 } });
    expect(bad).toMatchObject({
      isError: true,
      structuredContent: { data: { code: "INVALID_INPUT" } },
    });
  });

  it("runs a call as a task that another replica reports on and cancels, for its user only", async () => {
    const [a, b] = [await replica(), await replica()];
    const adaOnA = await connect(a, "ada");
    await adaOnA.listTools(); // the client learns which tools support tasks
    const stream = adaOnA.experimental.tasks.callToolStream(
      { name: "lookup_order", arguments: { orderId: "slow" } },
      CallToolResultSchema,
      { task: {} },
    );
    const first = (await stream.next()).value;
    expect(first).toMatchObject({ type: "taskCreated", task: { status: "working" } });
    const taskId = (first as { task: { taskId: string } }).task.taskId;
    await stream.return();

    // Replica B, another session of the same user: it reads the task from the run store.
    const adaOnB = await connect(b, "ada");
    expect(await adaOnB.experimental.tasks.getTask(taskId)).toMatchObject({
      taskId,
      status: "working",
    });
    expect((await adaOnB.experimental.tasks.listTasks()).tasks.map((t) => t.taskId)).toContain(
      taskId,
    );
    // Another user does not see it.
    const eveOnB = await connect(b, "eve");
    await expect(eveOnB.experimental.tasks.getTask(taskId)).rejects.toThrow(/not found/i);
    await expect(eveOnB.experimental.tasks.cancelTask(taskId)).rejects.toThrow(/not found/i);

    await adaOnB.experimental.tasks.cancelTask(taskId);
    await expect
      .poll(async () => (await adaOnA.experimental.tasks.getTask(taskId)).status, { timeout: 5000 })
      .toBe("cancelled");
    const result = await adaOnA.experimental.tasks.getTaskResult(taskId, CallToolResultSchema);
    expect(result).toMatchObject({ isError: true, structuredContent: { status: "cancelled" } });
  });

  it("finishes a task and answers its result through either replica", async () => {
    const [a, b] = [await replica(), await replica()];
    const onA = await connect(a, "ada");
    await onA.listTools();
    const messages = [];
    for await (const m of onA.experimental.tasks.callToolStream(
      { name: "lookup_order", arguments: { orderId: "3" } },
      CallToolResultSchema,
      { task: {} },
    )) {
      messages.push(m);
    }
    expect(messages[0]).toMatchObject({ type: "taskCreated" });
    expect(messages.at(-1)).toMatchObject({
      type: "result",
      result: { content: [{ text: "order 3: 42" }] },
    });
    const taskId = (messages[0] as { task: { taskId: string } }).task.taskId;
    const onB = await connect(b, "ada");
    expect(await onB.experimental.tasks.getTask(taskId)).toMatchObject({ status: "completed" });
    expect(await onB.experimental.tasks.getTaskResult(taskId, CallToolResultSchema)).toMatchObject({
      content: [{ text: "order 3: 42" }],
    });
  });
});

describe("graph tool options", () => {
  it("are checked at creation, INVALID_OPTIONS naming the field", async () => {
    const queue = new RunQueue({ store: new SqliteRunStore({ path: join(dir, "opts.db") }) });
    const host = new GraphHost({ graph: lookup, runtime: new InProcessRuntime(), queue });
    const runtime = new InProcessRuntime();
    runtime.register("echo", async () => "e");
    const messageOf = (graphs: unknown, agents: string[] = []): string => {
      try {
        createMcpHandler({ runtime, agents, graphs: graphs as never });
      } catch (err) {
        return `${(err as { code: string }).code} ${(err as Error).message}`;
      }
      return "created";
    };
    expect(messageOf([{ name: "g", host }])).toBe("created");
    expect(messageOf([{ name: "g", host: {} }])).toMatch(/INVALID_OPTIONS.*graphs\[0\]\.host/);
    expect(messageOf([{ name: "g", host, entryPoint: "nope" }])).toMatch(
      /graphs\[0\]\.entryPoint names "nope", which the host does not have \(it has: default\)/,
    );
    expect(messageOf([{ name: "echo", host }], ["echo"])).toMatch(
      /graphs\[0\]\.name "echo" names two tools/,
    );
    expect(messageOf([{ name: "bad name", host }])).toMatch(/graphs\[0\]\.name/);
    expect(messageOf([])).toMatch(/at least one agent/);
    await queue.store.close();
  });
});
