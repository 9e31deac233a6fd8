// The AG-UI adapter in process: every event it writes is checked against @ag-ui/core 1.0's own
// `EventSchema` (core/src/schemas.ts); the bridges' tests run @ag-ui/client's HttpAgent on it.
import { EventSchema } from "@ag-ui/core/schemas";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { ExecContext } from "../context/exec-context.js";
import { NervaError } from "../errors.js";
import { GraphHost } from "../graph/host/graph-host.js";
import { END, defineGraph, fnNode, inputNode } from "../graph/index.js";
import { Orchestrator } from "../orchestrator/orchestrator.js";
import { InMemoryRunStore } from "../runs/memory/in-memory-store.js";
import { RunQueue } from "../runs/run-queue.js";
import { Runner } from "../runs/runner.js";
import type { RunEvent } from "../runs/types.js";
import { InProcessRuntime } from "../runtime/in-process-runtime.js";
import { FunctionToolManager, defineTool } from "../tools/function-tool-manager.js";
import type { AgUiEvent } from "./events.js";
import { parseRunAgentInput } from "./input.js";
import { statePatch } from "./state-patch.js";
import { encodeEvent, toAgUiEvents, type AgUiMessage, type AgUiStreamOptions } from "./stream.js";

const stops: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const stop of stops.splice(0)) await stop();
});

async function collect(items: AsyncIterable<AgUiMessage>): Promise<AgUiEvent[]> {
  const out: AgUiEvent[] = [];
  for await (const m of items) {
    // Every event is one @ag-ui/core accepts as it is.
    const checked = EventSchema.safeParse(m.event);
    expect(checked.error?.issues ?? [], JSON.stringify(m.event)).toEqual([]);
    out.push(m.event);
  }
  return out;
}
const types = (events: readonly AgUiEvent[]): string[] => events.map((e) => e.type);
const ids = (nervaRunId: string): AgUiStreamOptions => ({
  threadId: "t1",
  runId: "r1",
  nervaRunId,
});

/** A queue and a running Runner with an orchestrated handler per message. */
async function agents(): Promise<RunQueue> {
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
      if (input.message === "plain") return "a whole answer";
      if (input.message === "weather") {
        yield "Let me look.";
        await kit.tools.call("get_weather", { city: "Oslo" });
        yield " Sunny.";
        return;
      }
      if (input.message === "ask") {
        const answer = await ctx.run?.waitForInput<string>("confirm", { prompt: "Sure?" });
        yield `You said ${answer}.`;
        return;
      }
      if (input.message === "custom") await ctx.run?.emit("progress", { percent: 50 });
      yield "Hel";
      yield "lo";
      ctx.recordTokens({ promptTokens: 3, completionTokens: 2, costUsd: 0.25 });
    }),
  );
  const runner = new Runner({ queue, runtime });
  await runner.start();
  stops.push(() => runner.stop());
  return queue;
}

async function answer(queue: RunQueue, message: string, afterSeq = 0): Promise<AgUiEvent[]> {
  const run = await queue.enqueue({ handler: "agent", input: { message } });
  return collect(toAgUiEvents(queue.events(run.id), { ...ids(run.id), afterSeq }));
}

describe("toAgUiEvents", () => {
  it("turns a streamed answer into one text message and RUN_FINISHED with the usage", async () => {
    const queue = await agents();
    const events = await answer(queue, "hi");
    expect(types(events)).toEqual([
      "RUN_STARTED",
      "TEXT_MESSAGE_START",
      "TEXT_MESSAGE_CONTENT",
      "TEXT_MESSAGE_CONTENT",
      "TEXT_MESSAGE_END",
      "RUN_FINISHED",
    ]);
    expect(events[0]).toEqual({
      type: "RUN_STARTED",
      threadId: "t1",
      runId: "r1",
      protocolVersion: "1.0",
    });
    expect(events.filter((e) => e.type === "TEXT_MESSAGE_CONTENT").map((e) => e.delta)).toEqual([
      "Hel",
      "lo",
    ]);
    expect(events.at(-1)).toMatchObject({
      threadId: "t1",
      runId: "r1",
      result: "Hello",
      outcome: { type: "success" },
      usage: [{ inputTokens: 3, outputTokens: 2, totalTokens: 5 }],
      metadata: { nerva: { costUsd: 0.25 } },
    });
  });

  it("shows the model's reasoning as a reasoning message before the answer's text", async () => {
    const at = { runId: "r", at: 0, attempt: 1 };
    const events = await collect(
      toAgUiEvents(
        (async function* () {
          yield { ...at, seq: 1, type: "run.started", data: {} };
          yield {
            ...at,
            seq: 2,
            type: "output.delta",
            data: { chunk: "Hmm. ", kind: "reasoning" },
          };
          yield { ...at, seq: 3, type: "output.delta", data: { chunk: "Yes.", kind: "reasoning" } };
          yield { ...at, seq: 4, type: "output.delta", data: { chunk: "Four." } };
          yield { ...at, seq: 5, type: "run.succeeded", data: { output: "Four." } };
        })() as AsyncIterable<RunEvent>,
        ids("r"),
      ),
    );
    expect(types(events)).toEqual([
      "RUN_STARTED",
      "REASONING_START",
      "REASONING_MESSAGE_START",
      "REASONING_MESSAGE_CONTENT",
      "REASONING_MESSAGE_CONTENT",
      "REASONING_MESSAGE_END",
      "REASONING_END",
      "TEXT_MESSAGE_START",
      "TEXT_MESSAGE_CONTENT",
      "TEXT_MESSAGE_END",
      "RUN_FINISHED",
    ]);
    expect(
      events.filter((e) => e.type === "REASONING_MESSAGE_CONTENT").map((e) => e.delta),
    ).toEqual(["Hmm. ", "Yes."]);
  });

  it("writes a non-streaming answer's output as its text", async () => {
    const events = await answer(await agents(), "plain");
    expect(events.find((e) => e.type === "TEXT_MESSAGE_CONTENT")?.delta).toBe("a whole answer");
  });

  it("shows a kit tool call as TOOL_CALL_START/ARGS/END, then its TOOL_CALL_RESULT", async () => {
    const events = await answer(await agents(), "weather");
    expect(types(events)).toEqual([
      "RUN_STARTED",
      "TEXT_MESSAGE_START",
      "TEXT_MESSAGE_CONTENT",
      "TEXT_MESSAGE_END",
      "TOOL_CALL_START",
      "TOOL_CALL_ARGS",
      "TOOL_CALL_END",
      "TOOL_CALL_RESULT",
      "TEXT_MESSAGE_START",
      "TEXT_MESSAGE_CONTENT",
      "TEXT_MESSAGE_END",
      "RUN_FINISHED",
    ]);
    const start = events[4] as AgUiEvent;
    expect(start).toMatchObject({ toolCallName: "get_weather" });
    expect(JSON.parse(String(events[5]?.delta))).toEqual({ city: "Oslo" });
    expect(events[7]).toMatchObject({ toolCallId: start.toolCallId, role: "tool" });
    expect(JSON.parse(String(events[7]?.content))).toEqual({ city: "Oslo", sky: "sunny" });
  });

  it("ends a failed run with RUN_ERROR and the client-safe text only", async () => {
    const events = await answer(await agents(), "boom");
    expect(events.at(-1)).toEqual({
      type: "RUN_ERROR",
      message: "the agent failed",
      code: "HANDLER_ERROR",
    });
    expect(JSON.stringify(events)).not.toMatch(/ECONNREFUSED|secret/);
  });

  it("shows an app's own events as CUSTOM", async () => {
    const events = await answer(await agents(), "custom");
    expect(events).toContainEqual({ type: "CUSTOM", name: "progress", value: { percent: 50 } });
  });

  it("ends a paused run with an interrupt; the answered run continues after the pause", async () => {
    const queue = await agents();
    const run = await queue.enqueue({ handler: "agent", input: { message: "ask" } });
    const first = await collect(toAgUiEvents(queue.events(run.id), ids(run.id)));
    expect(first.at(-1)).toEqual({
      type: "RUN_FINISHED",
      threadId: "t1",
      runId: "r1",
      outcome: {
        type: "interrupt",
        interrupts: [
          {
            id: `${run.id}:confirm`,
            reason: "approval",
            message: "Sure?",
            metadata: { nerva: { runId: run.id, key: "confirm", data: {} } },
          },
        ],
      },
    });
    const paused = await queue.get(run.id);
    await queue.resume(run.id, "yes", { key: "confirm" });
    const next = await collect(
      toAgUiEvents(queue.events(run.id), {
        ...ids(run.id),
        runId: "r2",
        afterSeq: paused?.lastSeq ?? 0,
      }),
    );
    expect(types(next)).toEqual([
      "RUN_STARTED",
      "CUSTOM",
      "TEXT_MESSAGE_START",
      "TEXT_MESSAGE_CONTENT",
      "TEXT_MESSAGE_END",
      "RUN_FINISHED",
    ]);
    expect(next[1]).toMatchObject({ name: "nerva.run.resumed" });
    expect(next[3]?.delta).toBe("You said yes.");
    expect(next.at(-1)).toMatchObject({ runId: "r2", outcome: { type: "success" } });
  });

  it("ends a cancelled run with RUN_FINISHED, outcome cancelled", async () => {
    const queue = await agents();
    const run = await queue.enqueue({ handler: "agent", input: { message: "ask" } });
    const paused = await queue.wait(run.id, { until: ["paused"], timeoutSeconds: 5 });
    await queue.cancel(run.id);
    const events = await collect(
      toAgUiEvents(queue.events(run.id), { ...ids(run.id), afterSeq: paused.lastSeq }),
    );
    expect(types(events)).toEqual(["RUN_STARTED", "RUN_FINISHED"]);
    expect(events.at(-1)).toMatchObject({ outcome: { type: "cancelled" } });
  });

  it("ends with RUN_ERROR, no internal text, when the source fails", async () => {
    async function* failing(): AsyncGenerator<RunEvent> {
      yield { runId: "x", seq: 1, type: "run.started", at: 0, attempt: 1, data: {} };
      throw new Error("disk /var/lib/x is full");
    }
    const events = await collect(toAgUiEvents(failing(), ids("x")));
    expect(events.at(-1)).toEqual({
      type: "RUN_ERROR",
      message: "Internal server error.",
      code: "INTERNAL",
    });
  });
});

describe("a graph's state", () => {
  it("is a STATE_SNAPSHOT at the start, a STATE_DELTA at a pause and at the end", async () => {
    const State = z.object({ n: z.number().optional(), ok: z.string().optional() });
    const graph = defineGraph({
      name: "counter",
      state: State,
      nodes: {
        add: fnNode<z.output<typeof State>>(async (s) => ({ n: (s.n ?? 0) + 1 })),
        check: inputNode<z.output<typeof State>>({ prompt: "OK?", writes: "ok" }),
      },
      edges: [
        ["add", "check"],
        ["check", END],
      ],
      entry: "add",
    });
    const queue = new RunQueue({ store: new InMemoryRunStore(), retry: { maxAttempts: 1 } });
    const host = new GraphHost({ graph, queue });
    await host.start();
    stops.push(() => host.stop({ graceSeconds: 0 }));
    const ctx = ExecContext.create({ userId: "u1" });
    const id = await host.trigger("default", { n: 1 }, ctx);
    const state = {
      initial: { n: 1 },
      end: async () => (await host.get(id))?.state ?? null,
    };
    const first = await collect(toAgUiEvents(host.events(id), { ...ids(id), state }));
    expect(types(first)).toEqual([
      "RUN_STARTED",
      "STATE_SNAPSHOT",
      "STEP_STARTED",
      "STEP_FINISHED",
      "STEP_STARTED",
      "STEP_FINISHED",
      "STATE_DELTA",
      "RUN_FINISHED",
    ]);
    expect(first[1]).toMatchObject({ snapshot: { n: 1 } });
    expect(first[2]).toMatchObject({ stepName: "add" });
    expect(first[6]).toMatchObject({ delta: [{ op: "replace", path: "/n", value: 2 }] });
    expect(first.at(-1)).toMatchObject({ outcome: { type: "interrupt" } });

    const paused = await host.get(id);
    const afterSeq = (await queue.get(id))?.lastSeq ?? 0;
    await host.resume(id, "fine", { ctx });
    const rest = await collect(
      toAgUiEvents(host.events(id), {
        ...ids(id),
        afterSeq,
        state: { ...state, initial: paused?.state ?? {} },
      }),
    );
    expect(rest[1]).toMatchObject({ type: "STATE_SNAPSHOT", snapshot: { n: 2 } });
    expect(rest.at(-2)).toMatchObject({
      type: "STATE_DELTA",
      delta: [{ op: "add", path: "/ok", value: "fine" }],
    });
    expect(rest.at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "success" } });
  });

  it("patches objects key by key, escapes pointers, replaces arrays whole", () => {
    expect(
      statePatch(
        { a: { b: 1, c: 2 }, "x/y": 1, list: [1], gone: true },
        { a: { b: 1, c: 3 }, "x/y": 2, list: [1, 2], "t~": 0 },
      ),
    ).toEqual([
      { op: "remove", path: "/gone" },
      { op: "replace", path: "/a/c", value: 3 },
      { op: "replace", path: "/x~1y", value: 2 },
      { op: "replace", path: "/list", value: [1, 2] },
      { op: "add", path: "/t~0", value: 0 },
    ]);
  });
});

describe("parseRunAgentInput", () => {
  it("checks the body with @ag-ui/core's schema and names the field", async () => {
    const input = await parseRunAgentInput({ threadId: "t", runId: "r", messages: [] });
    expect(input).toMatchObject({ threadId: "t", runId: "r", messages: [] });
    const err = await parseRunAgentInput({ threadId: "t", messages: [] }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(NervaError);
    expect(err).toMatchObject({ code: "INVALID_INPUT" });
    expect((err as Error).message).toMatch(/body\.runId/);
  });

  it("refuses a body too deep before any schema work", async () => {
    let deep: unknown = {};
    for (let i = 0; i < 200; i++) deep = { a: deep };
    const err = await parseRunAgentInput({
      threadId: "t",
      runId: "r",
      messages: [],
      state: deep,
    }).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: "INVALID_INPUT" });
  });
});

describe("encodeEvent", () => {
  it("writes every event as @ag-ui/encoder does, the streamed chunks included", async () => {
    const { EventEncoder } = await import("@ag-ui/encoder");
    const encoder = new EventEncoder();
    const events: AgUiEvent[] = [
      ...["Hello", ' "quoted" ', "line\nbreak\r\n", "émoji 🚀", "\u0000\u2028", "{}"].map(
        (delta, i) => ({ type: "TEXT_MESSAGE_CONTENT", messageId: `m-${i}`, delta }),
      ),
      { type: "TEXT_MESSAGE_START", messageId: "m", role: "assistant" },
      { type: "RUN_FINISHED", threadId: "t", runId: "r", result: null },
      { type: "RUN_ERROR", message: "the agent failed", code: "AGENT_ERROR" },
    ];
    for (const event of events) {
      expect(encodeEvent(encoder, event)).toBe(
        encoder.encodeSSE(event as never).slice("data: ".length, -2),
      );
    }
  });
});
