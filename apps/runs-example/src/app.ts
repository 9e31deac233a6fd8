// Durable runs behind plain HTTP: an enqueue route, a run route, an SSE route that maps the
// browser's Last-Event-ID to `afterSeq` (a reconnecting client misses nothing and sees nothing
// twice), resume and cancel routes, and the worker that executes the runs. Any framework works
// the same way; node:http keeps the example to what matters.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import {
  ErrorCode,
  ExecContext,
  InProcessRuntime,
  NervaError,
  RunQueue,
  Runner,
  type RunStore,
} from "@nerva/core";
import { clientRun, clientRunEvent } from "@nerva/core/http";
import { lastEventSeq, toHttpError, writeSSE } from "@nerva/core/http";

/** The agent the example runs: loads an order, asks a human to approve, refunds. */
export function createRuntime(): InProcessRuntime {
  const runtime = new InProcessRuntime({ timeoutSeconds: 60 });
  runtime.register("refund_agent", async (input, ctx) => {
    const run = ctx.run;
    if (run === null) throw new Error("refund_agent runs as a durable run (enqueue it)");
    const order = await run.step("load-order", () => ({
      id: input.args.orderId ?? "?",
      total: 42,
    }));
    const answer = await run.waitForInput<{ approved: boolean }>("approve", {
      prompt: `Refund ${order.total} for order ${order.id}?`,
      kind: "approval",
      data: { orderId: order.id, total: order.total },
    });
    if (!answer.approved) return "declined";
    const refund = await run.step("refund", () => ({ id: `rf-${order.id}` }));
    return `refunded ${refund.id}`;
  });
  return runtime;
}

/** The worker: in production its own process (`node dist/main.js worker`). */
export function createWorker(queue: RunQueue): Runner {
  return new Runner({
    queue,
    runtime: createRuntime(),
    concurrency: 4,
    leaseSeconds: 30,
    heartbeatSeconds: 10,
  });
}

const MAX_BODY_BYTES = 64 * 1024;

async function readJson(req: IncomingMessage): Promise<Record<string, unknown>> {
  let size = 0;
  const chunks: Buffer[] = [];
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) {
      throw new NervaError(
        ErrorCode.INVALID_INPUT,
        `Invalid body: larger than ${MAX_BODY_BYTES} bytes.`,
      );
    }
    chunks.push(chunk);
  }
  if (size === 0) return {};
  try {
    const value: unknown = JSON.parse(Buffer.concat(chunks).toString("utf8"));
    if (typeof value === "object" && value !== null && !Array.isArray(value)) {
      return value as Record<string, unknown>;
    }
  } catch {
    // Answered below: the body is not a JSON object.
  }
  throw new NervaError(ErrorCode.INVALID_INPUT, "Invalid body: send a JSON object.");
}

function send(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  res
    .writeHead(status, { ...headers, "content-type": "application/json" })
    .end(JSON.stringify(body));
}

/**
 * A run's events as SSE, each with its seq as the id: a client reconnecting with `Last-Event-ID`
 * gets what came after it (a value that is not a seq is a 400), at its own pace.
 */
async function streamEvents(
  queue: RunQueue,
  id: string,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const afterSeq = lastEventSeq(req);
  // Checked before the stream starts: an unknown id is still an ordinary 404.
  if ((await queue.get(id)) === null) {
    throw new NervaError(ErrorCode.NOT_FOUND, `Run "${id}" does not exist.`);
  }
  // What a client may see: no worker ids, no error text that is not written for users.
  await writeSSE(res, queue.events(id, { afterSeq }), null, {
    message: (e) => ({ id: e.seq, event: e.type, data: clientRunEvent(e) }),
  });
}

/**
 * The HTTP side. Identity: a real app builds the context from its own authentication (see the
 * bridges); this example runs every request as one demo user.
 */
export function createServerFor(queue: RunQueue): Server {
  return createServer((req, res) => {
    void handle(queue, req, res).catch((err: unknown) => {
      const { status, headers, body } = toHttpError(err);
      if (res.headersSent) res.end();
      else send(res, status, body, headers);
    });
  });
}

async function handle(queue: RunQueue, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const url = new URL(req.url ?? "/", "http://localhost");
  const parts = url.pathname.split("/").filter(Boolean);
  if (parts[0] !== "runs")
    return send(res, 404, { error: { code: "NOT_FOUND", message: "No such route." } });
  const id = parts[1];
  const action = parts[2];
  if (req.method === "POST" && id === undefined) {
    const body = await readJson(req);
    const key = req.headers["idempotency-key"];
    const run = await queue.enqueue({
      handler: "refund_agent",
      input: {
        message: String(body.message ?? "refund"),
        args: { orderId: String(body.orderId ?? "") },
      },
      ctx: ExecContext.create({ userId: "demo-user" }),
      ...(typeof key === "string" && key !== "" ? { idempotencyKey: key } : {}),
    });
    return send(res, 202, { id: run.id, status: run.status, events: `/runs/${run.id}/events` });
  }
  if (id === undefined)
    return send(res, 405, { error: { code: "METHOD_NOT_ALLOWED", message: "POST /runs" } });
  if (req.method === "GET" && action === undefined) {
    const run = await queue.get(id);
    if (run === null) throw new NervaError(ErrorCode.NOT_FOUND, `Run "${id}" does not exist.`);
    // Not the record itself: it holds the enqueuer's context, the lease and operator error texts.
    return send(res, 200, clientRun(run));
  }
  if (req.method === "GET" && action === "events") return streamEvents(queue, id, req, res);
  if (req.method === "POST" && action === "resume") {
    const body = await readJson(req);
    return send(res, 200, clientRun(await queue.resume(id, { approved: body.approved === true })));
  }
  if (req.method === "POST" && action === "cancel")
    return send(res, 200, clientRun(await queue.cancel(id, { reason: "cancelled over HTTP" })));
  return send(res, 404, { error: { code: "NOT_FOUND", message: "No such route." } });
}

/** The queue the server and the worker share. */
export function createQueue(store: RunStore): RunQueue {
  return new RunQueue({ store, name: "refunds" });
}
