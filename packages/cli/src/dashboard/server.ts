import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { ErrorCode, ExecContext, NervaError, type GraphHost, type RunStore } from "@nerva/core";
import { lastEventSeq, toHttpError, writeSSE } from "@nerva/core/http";
import { describe, shown, times } from "./graph-shape.js";
import { DASHBOARD_HTML } from "./page.js";

/** Options of {@link startDashboard}. */
export interface DashboardOptions {
  /** Default 127.0.0.1. Any other address needs `allowRemote: true`. */
  readonly host?: string;
  /** Default 0 (a free port). A port in use rejects with UNAVAILABLE. */
  readonly port?: number;
  /** Serve clients that are not on this machine (put your own auth in front). Default false. */
  readonly allowRemote?: boolean;
}

/** A running dashboard. */
export interface Dashboard {
  readonly url: string;
  close(): Promise<void>;
}

const LOOPBACK = new Set(["127.0.0.1", "::1", "::ffff:127.0.0.1", "localhost"]);
const MAX_BODY = 64 * 1024;

function send(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    "content-type": "application/json; charset=utf-8",
    "cache-control": "no-store",
  });
  res.end(text);
}

function fail(res: ServerResponse, err: unknown): void {
  if (err instanceof NervaError) {
    // The status and whether the message may be shown come from the one error policy.
    const { status, body } = toHttpError(err);
    send(res, status, { error: { code: body.error.code, message: body.error.message } });
  } else {
    // Internals never reach the page.
    send(res, 500, { error: { code: "INTERNAL", message: "The dashboard failed to answer." } });
  }
}

async function body(req: IncomingMessage): Promise<Record<string, unknown>> {
  let size = 0;
  const chunks: Buffer[] = [];
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY)
      throw new NervaError(ErrorCode.INVALID_INPUT, `The request body is over ${MAX_BODY} bytes.`);
    chunks.push(chunk as Buffer);
  }
  try {
    const value = JSON.parse(Buffer.concat(chunks).toString("utf8") || "{}") as unknown;
    if (typeof value !== "object" || value === null || Array.isArray(value))
      throw new Error("not an object");
    return value as Record<string, unknown>;
  } catch {
    throw new NervaError(ErrorCode.INVALID_INPUT, "The request body must be a JSON object.");
  }
}

async function runs(
  runtime: GraphHost,
  queueOf: (ep: string) => string,
  store: RunStore,
): Promise<unknown> {
  const out: unknown[] = [];
  for (const ep of runtime.getEntryPoints()) {
    const page = await store.list({ queue: queueOf(ep.id), limit: 50, cursor: null });
    for (const run of page.runs) {
      if (run.handlers[0] !== runtime.graph.name) continue;
      const r = await runtime.get(run.id);
      if (r !== null) out.push({ ...r, sessionState: null, ...(await times(store, run)) });
    }
  }
  return out;
}

/**
 * Serves the runs dashboard of a graph runtime: one self-contained page (no CDN) listing
 * runs by entry point and status, each run's path on the graph with the current node
 * highlighted, its live events, and a form answering a paused input node (`resume`). Binds to
 * 127.0.0.1 and refuses other clients unless `allowRemote`.
 *
 * @example
 * const dashboard = await startDashboard(runtime, { port: 4300 });
 * console.log(`open ${dashboard.url}`);
 */
export async function startDashboard(
  runtime: GraphHost,
  store: RunStore,
  options: DashboardOptions = {},
): Promise<Dashboard> {
  const host = options.host ?? "127.0.0.1";
  if (!LOOPBACK.has(host) && options.allowRemote !== true) {
    throw new NervaError(
      ErrorCode.INVALID_OPTIONS,
      `Invalid host "${host}": the dashboard serves this machine only; pass allowRemote: true (behind your own auth) to listen on ${host}.`,
    );
  }
  const requestedPort = options.port ?? 0;
  if (!Number.isInteger(requestedPort) || requestedPort < 0 || requestedPort > 65_535) {
    throw new NervaError(
      ErrorCode.INVALID_OPTIONS,
      `Invalid port ${String(requestedPort)}: pass a whole number from 0 to 65535 (0 picks a free port).`,
      { issues: [{ path: "options.port", message: "must be a whole number from 0 to 65535" }] },
    );
  }
  const queues = new Map(runtime.getEntryPoints().map((e) => [e.id, e.queue]));
  const server: Server = createServer((req, res) => {
    void handle(req, res).catch((err: unknown) => fail(res, err));
  });
  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (options.allowRemote !== true && !LOOPBACK.has(req.socket.remoteAddress ?? "")) {
      send(res, 403, {
        error: { code: "PERMISSION_DENIED", message: "The dashboard serves this machine only." },
      });
      return;
    }
    const url = new URL(req.url ?? "/", "http://dashboard");
    const parts = url.pathname.split("/").filter((p) => p !== "");
    if (req.method === "GET" && url.pathname === "/") {
      res.writeHead(200, {
        "content-type": "text/html; charset=utf-8",
        "content-security-policy":
          "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'",
      });
      res.end(DASHBOARD_HTML);
      return;
    }
    if (parts[0] !== "api")
      return send(res, 404, { error: { code: "NOT_FOUND", message: "No such page." } });
    if (req.method === "GET" && parts[1] === "graph")
      return send(res, 200, { ...describe(runtime), workers: runtime.isRunning });
    if (parts[1] === "runs" && parts.length === 2) {
      if (req.method === "GET")
        return send(res, 200, await runs(runtime, (ep) => queues.get(ep) ?? ep, store));
      if (req.method === "POST") {
        const b = await body(req);
        const input = (b.input ?? {}) as Record<string, unknown>;
        const id = await runtime.trigger(
          String(b.entryPoint ?? "default"),
          input,
          ExecContext.create(),
        );
        return send(res, 202, { runId: id });
      }
    }
    const id = parts[2];
    if (parts[1] === "runs" && id !== undefined) {
      if (req.method === "GET" && parts.length === 3) {
        const r = await shown(runtime, store, id);
        return r === null
          ? send(res, 404, { error: { code: "NOT_FOUND", message: `No run ${id}.` } })
          : send(res, 200, r);
      }
      if (req.method === "POST" && parts[3] === "input") {
        const b = await body(req);
        await runtime.resume(id, b.value);
        return send(res, 200, await shown(runtime, store, id));
      }
      if (req.method === "GET" && parts[3] === "events") return streamEvents(runtime, id, req, res);
    }
    send(res, 404, { error: { code: "NOT_FOUND", message: "No such route." } });
  }
  await listen(server, requestedPort, host);
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${host.includes(":") ? `[${host}]` : host}:${port}/`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Listens on `port`; a port in use or not allowed is a NervaError, not a crash. */
function listen(server: Server, port: number, host: string): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const failed = (err: NodeJS.ErrnoException) => {
      const why =
        err.code === "EADDRINUSE"
          ? "is already in use"
          : err.code === "EACCES"
            ? "needs privileges this process lacks"
            : `cannot be listened on (${err.code ?? err.message})`;
      reject(
        new NervaError(
          ErrorCode.UNAVAILABLE,
          `The dashboard cannot listen on ${host}: port ${port} ${why}; pass another port (0 picks a free one).`,
        ),
      );
    };
    server.once("error", failed);
    server.listen(port, host, () => {
      server.off("error", failed);
      resolve();
    });
  });
}

/**
 * Server-sent events of one run, each with its seq as the id: replay after Last-Event-ID,
 * then live, at the page's pace; the tail closes when the page leaves.
 */
async function streamEvents(
  runtime: GraphHost,
  id: string,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const afterSeq = lastEventSeq(req);
  // Checked before the stream starts: an unknown id is an ordinary 404.
  if ((await runtime.get(id)) === null) {
    throw new NervaError(ErrorCode.NOT_FOUND, `No run ${id}.`);
  }
  await writeSSE(res, runtime.events(id, { afterSeq }), null, {
    message: (e) => ({ id: e.seq, event: e.type, data: e }),
  });
}
