// The AG-UI route on a bridge, driven by @ag-ui/client's own HttpAgent (loaded on use: a dev
// dependency of the suite's user). What it relies on, read in @ag-ui/client 1.0.0: runAgent()
// POSTs a RunAgentInput, verifies the event order, applies the events to `messages` and `state`,
// keeps `pendingInterrupts` from a RUN_FINISHED with an interrupt outcome, and refuses a next run
// that does not answer them in `resume`.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { createAgUiRoute, type AgUiRoute } from "../ag-ui/index.js";
import { END, GraphHost, defineGraph, fnNode, inputNode } from "../graph/index.js";
import { Orchestrator } from "../orchestrator/orchestrator.js";
import { InMemoryRunStore } from "../runs/memory/in-memory-store.js";
import { RunQueue } from "../runs/run-queue.js";
import { Runner } from "../runs/runner.js";
import { InProcessRuntime } from "../runtime/in-process-runtime.js";
import { FunctionToolManager, defineTool } from "../tools/function-tool-manager.js";

/** A started app serving the two routes: `agent` at `<url>/ag-ui`, `graph` at `<url>/ag-ui/graph`. */
export interface AgUiBridgeApp {
  readonly url: string;
  close(): Promise<void>;
}

/**
 * How {@link describeAgUiBridge} mounts the routes on a bridge: serve `routes.agent` at
 * `POST /ag-ui` and `routes.graph` at `POST /ag-ui/graph`, on 127.0.0.1 port 0, with the user
 * named in the `x-test-user` header as the context's `userId` (none without the header).
 */
export type AgUiBridgeMount = (routes: {
  readonly agent: AgUiRoute;
  readonly graph: AgUiRoute;
}) => Promise<AgUiBridgeApp>;

// What the suite uses of @ag-ui/client's HttpAgent (declared here: its types are not needed).
interface Message {
  readonly role: string;
  readonly content?: unknown;
  readonly toolCalls?: readonly { readonly id: string }[];
  readonly toolCallId?: string;
}
interface Interrupt {
  readonly id: string;
  readonly reason?: string;
  readonly message?: string;
}
interface Agent {
  runAgent(params?: {
    resume?: { interruptId: string; status: string; payload?: unknown }[];
  }): Promise<{ newMessages: Message[]; result: unknown }>;
  subscribe(subscriber: Record<string, (params: { event: Record<string, string> }) => void>): void;
  readonly pendingInterrupts: Interrupt[];
  readonly state: unknown;
}
type AgentCtor = new (config: {
  url: string;
  headers: Record<string, string>;
  initialMessages?: { id: string; role: string; content: string }[];
  initialState?: Record<string, unknown>;
}) => Agent;

const State = z.object({ n: z.number().optional(), ok: z.string().optional() });
type State = z.output<typeof State>;

/**
 * The AG-UI route of `@nerva/core/ag-ui` mounted on a bridge, checked with @ag-ui/client's
 * `HttpAgent` over real HTTP: a streamed text answer, a tool call and its result, a failed run
 * as RUN_ERROR with the client-safe text only, a pause as an interrupt and its resume, another
 * user's answer refused (404) and no user refused (401), a graph's state through a pause and its
 * resume, and a body that is not a RunAgentInput (400 naming the field). Needs `@ag-ui/client`,
 * `@ag-ui/core` and `@ag-ui/encoder` installed.
 *
 * @example
 * describeAgUiBridge("Express", async ({ agent, graph }) => listen(appServing(agent, graph)));
 */
export function describeAgUiBridge(label: string, mount: AgUiBridgeMount): void {
  describe(`AG-UI on ${label}, through @ag-ui/client's HttpAgent`, () => {
    let app: AgUiBridgeApp | null = null;
    let HttpAgent: AgentCtor;
    let stop: () => Promise<void> = async () => undefined;

    beforeAll(async () => {
      HttpAgent = ((await import("@ag-ui/client")) as unknown as { HttpAgent: AgentCtor })
        .HttpAgent;
      const queue = new RunQueue({ store: new InMemoryRunStore(), retry: { maxAttempts: 1 } });
      const tools = new FunctionToolManager().register(
        defineTool({
          name: "get_weather",
          description: "The weather in a city",
          parameters: z.object({ city: z.string() }),
          run: async ({ city }) => ({ city, sky: "sunny" }),
        }),
      );
      const runtime = new InProcessRuntime();
      const orchestrator = new Orchestrator({ tools, runtime });
      runtime.register(
        "agent",
        orchestrator.handler(async function* (input, ctx, kit) {
          if (input.message === "boom") throw new Error("ECONNREFUSED /var/run/secret.sock");
          if (input.message === "weather") {
            const found = await kit.tools.call("get_weather", { city: "Oslo" });
            yield `It is ${String((found.output as { sky: string }).sky)}.`;
            return;
          }
          if (input.message === "ask") {
            const answer = await ctx.run?.waitForInput<string>("confirm", { prompt: "Sure?" });
            yield `You said ${answer}.`;
            return;
          }
          yield "Hello, ";
          yield `${ctx.userId}.`;
        }),
      );
      const runner = new Runner({ queue, runtime });
      await runner.start();
      const graph = new GraphHost({
        queue,
        graph: defineGraph({
          name: "counter",
          state: State,
          nodes: {
            add: fnNode<State>(async (s) => ({ n: (s.n ?? 0) + 1 })),
            check: inputNode<State>({ prompt: "OK?", writes: "ok" }),
          },
          edges: [
            ["add", "check"],
            ["check", END],
          ],
          entry: "add",
        }),
      });
      await graph.start();
      stop = async () => {
        await graph.stop({ graceSeconds: 0 });
        await runner.stop({ graceSeconds: 0 });
      };
      app = await mount({
        agent: createAgUiRoute({ queue, handler: "agent" }),
        graph: createAgUiRoute({ queue, graph }),
      });
    });
    afterAll(async () => {
      await app?.close();
      await stop();
    });

    const url = (path: string): string => `${(app as AgUiBridgeApp).url}${path}`;
    const agentOf = (user: string, text: string): Agent =>
      new HttpAgent({
        url: url("/ag-ui"),
        headers: { "x-test-user": user },
        initialMessages: [{ id: `m-${Math.random()}`, role: "user", content: text }],
      });

    it("streams a text answer into the agent's messages", async () => {
      const { newMessages, result } = await agentOf("alice", "hi").runAgent();
      expect(newMessages).toEqual([
        expect.objectContaining({ role: "assistant", content: "Hello, alice." }),
      ]);
      expect(result).toBe("Hello, alice.");
    });

    it("shows a tool call and its result as messages", async () => {
      const { newMessages } = await agentOf("alice", "weather").runAgent();
      const call = newMessages.find((m) => m.role === "assistant" && m.toolCalls !== undefined);
      expect(call).toMatchObject({
        toolCalls: [{ type: "function", function: { name: "get_weather" } }],
      });
      expect(newMessages).toContainEqual(
        expect.objectContaining({
          role: "tool",
          toolCallId: call?.toolCalls?.[0]?.id,
          content: '{"city":"Oslo","sky":"sunny"}',
        }),
      );
      expect(newMessages.at(-1)).toMatchObject({ role: "assistant", content: "It is sunny." });
    });

    it("ends a failed run with RUN_ERROR carrying the client-safe text only", async () => {
      const agent = agentOf("alice", "boom");
      const errors: string[] = [];
      agent.subscribe({
        onRunErrorEvent: ({ event }) => void errors.push(event.message as string),
      });
      await agent.runAgent().catch(() => undefined);
      expect(errors).toEqual(["the agent failed"]);
    });

    it("pauses as an interrupt and continues when the next run resumes it", async () => {
      const agent = agentOf("alice", "ask");
      await agent.runAgent();
      expect(agent.pendingInterrupts).toEqual([
        expect.objectContaining({ reason: "approval", message: "Sure?" }),
      ]);
      const interruptId = agent.pendingInterrupts[0]?.id ?? "";
      const { newMessages } = await agent.runAgent({
        resume: [{ interruptId, status: "resolved", payload: "yes" }],
      });
      expect(newMessages.at(-1)).toMatchObject({ role: "assistant", content: "You said yes." });
      expect(agent.pendingInterrupts).toEqual([]);
    });

    it("refuses another user's answer to an interrupt (404, the run stays paused) and no user (401)", async () => {
      const alice = agentOf("alice", "ask");
      await alice.runAgent();
      const interruptId = alice.pendingInterrupts[0]?.id ?? "";
      await expect(
        agentOf("bob", "ask").runAgent({
          resume: [{ interruptId, status: "resolved", payload: "yes" }],
        }),
      ).rejects.toThrow(/404/);
      const res = await fetch(url("/ag-ui"), {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ threadId: "t", runId: "r", messages: [] }),
      });
      expect(res.status).toBe(401);
      const { newMessages } = await alice.runAgent({
        resume: [{ interruptId, status: "resolved", payload: "ok" }],
      });
      expect(newMessages.at(-1)).toMatchObject({ content: "You said ok." });
    });

    it("keeps a graph's state in the agent's state, through a pause and its resume", async () => {
      const agent = new HttpAgent({
        url: url("/ag-ui/graph"),
        headers: { "x-test-user": "alice" },
        initialState: { n: 1 },
      });
      const steps: string[] = [];
      agent.subscribe({
        onStepStartedEvent: ({ event }) => void steps.push(event.stepName as string),
      });
      await agent.runAgent();
      expect(steps).toEqual(["add", "check"]);
      expect(agent.state).toEqual({ n: 2 });
      expect(agent.pendingInterrupts).toEqual([expect.objectContaining({ message: "OK?" })]);
      const interruptId = agent.pendingInterrupts[0]?.id ?? "";
      await agent.runAgent({ resume: [{ interruptId, status: "resolved", payload: "fine" }] });
      expect(agent.state).toEqual({ n: 2, ok: "fine" });
    });

    it("refuses a body that is not a RunAgentInput with a 400 naming the field", async () => {
      const res = await fetch(url("/ag-ui"), {
        method: "POST",
        headers: { "content-type": "application/json", "x-test-user": "alice" },
        body: JSON.stringify({ threadId: "t", messages: [] }),
      });
      expect(res.status).toBe(400);
      const body = (await res.json()) as { error: { code: string; message: string } };
      expect(body.error.code).toBe("INVALID_INPUT");
      expect(body.error.message).toMatch(/body\.runId/);
    });
  });
}
