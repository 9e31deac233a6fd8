// A tool call gated by an approval its requester may give (`allowSelfApproval`), in a chat: the
// run pauses, the stream shows the AI SDK's tool approval request, and the client's answer (the
// next POST, as useChat sends it after `addToolApprovalResponse`) resumes the run. The protocol
// is the `ai` package's (v6.0.326), read from its sources:
// - ui-message-stream/ui-message-chunks.ts: `tool-approval-request` { approvalId, toolCallId },
//   `tool-output-denied` { toolCallId };
// - ui/process-ui-message-stream.ts: the request puts the tool part in state
//   `approval-requested` with `approval.id`; `tool-output-denied` in `output-denied`;
// - ui/chat.ts: `addToolApprovalResponse` sets `approval-responded` with `approval: { id,
//   approved, reason }` and, with `sendAutomaticallyWhen`, posts the messages again with trigger
//   `submit-message` and the assistant message's id as `messageId`, continuing that message;
// - ui/last-assistant-message-is-complete-with-approval-responses.ts.
import { execSync } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, rmSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  ExecContext,
  FunctionToolManager,
  InProcessRuntime,
  Orchestrator,
  RunQueue,
  Runner,
  defineTool,
  type RunStore,
} from "@nerva/core";
import { DeclarativePolicyEngine } from "@nerva/core/policy";
import { RedisRunStore } from "@nerva/core/redis";
import { SqliteRunStore } from "@nerva/core/sqlite";
import { createChatRoutes } from "@nerva/core/ui-stream";
import {
  DefaultChatTransport,
  lastAssistantMessageIsCompleteWithApprovalResponses,
  readUIMessageStream,
  type UIMessage,
  type UIMessageChunk,
} from "ai";
import express from "express";
import { afterAll, afterEach, beforeEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { nervaChat, nervaErrorHandler, nervaMiddleware } from "./index.js";

const dir = mkdtempSync(join(tmpdir(), "nerva-chat-approval-"));
const REDIS_URL = process.env["NERVA_REDIS_URL"] ?? "redis://127.0.0.1:6379";
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
  execSync(
    `redis-cli -u ${REDIS_URL} --scan --pattern 'nerva-test:chat-approval:${process.pid}:*' | xargs -r redis-cli -u ${REDIS_URL} del`,
  );
});

/** The chat's store and the approvals' store: two handles on one SQLite file, or one Redis prefix. */
type Stores = () => { chat: RunStore; approvals: RunStore };
const STORES: [string, Stores][] = [
  [
    "SQLite",
    () => {
      const path = join(dir, `${Math.random()}.db`);
      return {
        chat: new SqliteRunStore({ path, pollSeconds: 0.05 }),
        approvals: new SqliteRunStore({ path }),
      };
    },
  ],
  [
    "Redis",
    () => {
      const prefix = `nerva-test:chat-approval:${process.pid}:${Math.random().toString(36).slice(2)}`;
      return {
        chat: new RedisRunStore({ url: REDIS_URL, prefix }),
        approvals: new RedisRunStore({ url: REDIS_URL, prefix }),
      };
    },
  ],
];

interface App {
  readonly url: string;
  readonly queue: RunQueue;
  readonly policy: DeclarativePolicyEngine;
  refunds: number;
  close(): Promise<void>;
}

async function startApp(stores: Stores): Promise<App> {
  const { chat, approvals: approvalStore } = stores();
  const queue = new RunQueue({ store: chat, name: "chat", retry: { maxAttempts: 1 } });
  const approvals = new RunQueue({ store: approvalStore, name: "approvals" });
  const policy = new DeclarativePolicyEngine(
    {
      version: 1,
      approvals: [
        {
          name: "refunds",
          kind: "tool",
          names: ["refund"],
          approverRoles: ["customer"],
          allowSelfApproval: true,
        },
      ],
    },
    { approvals },
  );
  const app = { refunds: 0 } as { refunds: number };
  const tools = new FunctionToolManager().register(
    defineTool({
      name: "refund",
      description: "Refunds an order",
      parameters: z.object({ orderId: z.string(), amount: z.number() }),
      run: async ({ orderId, amount }) => {
        app.refunds++;
        return { orderId, refunded: amount };
      },
    }),
  );
  const runtime = new InProcessRuntime();
  const orchestrator = new Orchestrator({ tools, runtime, policy });
  runtime.register(
    "chat_agent",
    orchestrator.handler(async function* (_input, _ctx, kit) {
      const r = await kit.tools.call("refund", { orderId: "o-7", amount: 42 });
      yield r.status === "success" ? "Refunded 42." : `No refund (${r.status}).`;
    }),
  );
  const runner = new Runner({ queue, runtime, heartbeatSeconds: 1, leaseSeconds: 5 });
  await runner.start();
  const server = express();
  server.use(
    nervaMiddleware({
      resolve: (req) => ({
        userId: req.get("x-test-user") ?? null,
        roles: req.get("x-test-user") === "carol" ? [] : ["customer"],
        allowedAgents: null,
        allowedTools: null,
      }),
    }),
  );
  server.use(express.json());
  server.use(nervaChat(createChatRoutes({ queue, handler: "chat_agent" })));
  server.use(nervaErrorHandler());
  const http1 = http.createServer(server);
  http1.listen(0, "127.0.0.1");
  await once(http1, "listening");
  const { port } = http1.address() as AddressInfo;
  return Object.assign(app, {
    url: `http://127.0.0.1:${port}`,
    queue,
    policy,
    close: async () => {
      http1.closeAllConnections();
      http1.close();
      await runner.stop({ graceSeconds: 1 });
      await queue.store.close();
      await approvals.store.close();
    },
  });
}

const transport = (app: App, user = "alice"): DefaultChatTransport<UIMessage> =>
  new DefaultChatTransport({ api: `${app.url}/api/chat`, headers: { "x-test-user": user } });

const ask: UIMessage = { id: "u1", role: "user", parts: [{ type: "text", text: "refund o-7" }] };

/** What readUIMessageStream builds from `stream`, continuing `message` when given (as useChat). */
async function build(stream: ReadableStream<UIMessageChunk>, message?: UIMessage) {
  const errors: string[] = [];
  let last: UIMessage | undefined;
  for await (const m of readUIMessageStream({
    stream,
    ...(message === undefined ? {} : { message }),
    onError: (e) => errors.push(String(e)),
  })) {
    last = m;
  }
  if (last === undefined) throw new Error("the stream built no message");
  return { message: last, errors };
}

/** The first answer: up to the approval request. */
async function askRefund(app: App, chatId: string, user = "alice"): Promise<UIMessage> {
  const stream = await transport(app, user).sendMessages({
    chatId,
    messages: [ask],
    trigger: "submit-message",
    messageId: undefined,
    abortSignal: undefined,
  });
  return (await build(stream)).message;
}

/** The assistant message as addToolApprovalResponse leaves it. */
function answered(message: UIMessage, approved: boolean, reason?: string): UIMessage {
  return {
    ...message,
    parts: message.parts.map((p) =>
      p.type === "tool-refund" && p.state === "approval-requested"
        ? {
            ...p,
            state: "approval-responded" as const,
            approval: { id: p.approval.id, approved, ...(reason === undefined ? {} : { reason }) },
          }
        : p,
    ),
  } as UIMessage;
}

const sendAnswer = (app: App, chatId: string, message: UIMessage, user = "alice") =>
  transport(app, user).sendMessages({
    chatId,
    messages: [ask, message],
    trigger: "submit-message",
    messageId: message.id,
    abortSignal: undefined,
  });

describe.each(STORES)("a tool call's approval in useChat (%s)", (_name, stores) => {
  let app: App;
  beforeEach(async () => {
    app = await startApp(stores);
  });
  afterEach(async () => {
    await app.close();
  });

  it("pauses at the approval request, and the client's approval runs the tool and ends the answer", async () => {
    const first = await askRefund(app, "a1");
    const tool = first.parts.find((p) => p.type === "tool-refund");
    expect(tool).toMatchObject({
      state: "approval-requested",
      input: { orderId: "o-7", amount: 42 },
    });
    expect(first.metadata).toMatchObject({ runId: first.id, status: "paused" });
    const run = await app.queue.get(first.id);
    expect(run?.status).toBe("paused");
    expect(run?.pause?.kind).toBe("approval");
    const approvalId = (tool as { approval: { id: string } }).approval.id;
    expect(approvalId).toBe(run?.pause?.data["approvalId"]);
    expect(app.refunds).toBe(0);

    const approved = answered(first, true);
    expect(lastAssistantMessageIsCompleteWithApprovalResponses({ messages: [ask, approved] })).toBe(
      true,
    );
    const { message, errors } = await build(await sendAnswer(app, "a1", approved), approved);
    expect(errors).toEqual([]);
    expect(message.id).toBe(first.id);
    const toolParts = message.parts.filter((p) => p.type === "tool-refund");
    expect(toolParts).toHaveLength(1);
    expect(toolParts[0]).toMatchObject({
      state: "output-available",
      output: { orderId: "o-7", refunded: 42 },
    });
    expect(message.parts.filter((p) => p.type === "text").map((p) => p.text)).toEqual([
      "Refunded 42.",
    ]);
    expect(message.metadata).toMatchObject({ status: "succeeded" });
    expect(app.refunds).toBe(1);
    // The policy's approval was decided by the requester and used.
    const alice = ExecContext.create({ userId: "alice", permissions: { roles: ["customer"] } });
    const approval = await app.policy.approval(approvalId, alice);
    expect(approval).toMatchObject({ status: "used", decidedBy: "alice" });
  });

  it("a denial ends the tool call as denied, and the tool never runs", async () => {
    const first = await askRefund(app, "a2");
    const denied = answered(first, false, "not this one");
    const { message } = await build(await sendAnswer(app, "a2", denied), denied);
    expect(message.parts.find((p) => p.type === "tool-refund")).toMatchObject({
      state: "output-denied",
    });
    expect(message.parts.filter((p) => p.type === "text").map((p) => p.text)).toEqual([
      "No refund (permission_denied).",
    ]);
    expect(app.refunds).toBe(0);
    expect((await app.queue.get(first.id))?.status).toBe("succeeded");
  });

  it("a reconnect while the run waits replays up to the request; only the run's user may answer", async () => {
    const first = await askRefund(app, "a3");
    const resumed = await transport(app).reconnectToStream({ chatId: "a3" });
    const again = await build(resumed as ReadableStream<UIMessageChunk>);
    expect(again.message.parts.find((p) => p.type === "tool-refund")).toMatchObject({
      state: "approval-requested",
    });
    // Another user sending the same answer finds no such chat: 409, nothing answered.
    await expect(sendAnswer(app, "a3", answered(first, true), "mallory")).rejects.toThrow();
    expect((await app.queue.get(first.id))?.status).toBe("paused");
    const { message } = await build(
      await sendAnswer(app, "a3", answered(first, true)),
      answered(first, true),
    );
    expect(message.metadata).toMatchObject({ status: "succeeded" });
    // Answered once: the same answer again is refused (409).
    await expect(sendAnswer(app, "a3", answered(first, true))).rejects.toThrow(/approval/);
    expect(app.refunds).toBe(1);
  });

  it("a requester who may not approve gets the call refused as before, with no pause", async () => {
    const first = await askRefund(app, "a4", "carol");
    expect(first.parts.find((p) => p.type === "tool-refund")).toMatchObject({
      state: "output-error",
    });
    expect(first.metadata).toMatchObject({ status: "succeeded" });
    expect(app.refunds).toBe(0);
  });
});
