import { randomBytes } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { z } from "zod";
import { ErrorCode, parseOrThrow } from "../errors.js";
import type { TraceDetail, TraceSummary } from "../tracing/trace-store.js";
import { renderPage } from "./page.js";
import { detailForPage, sendJson, summaryForPage, type ApiError } from "./respond.js";

/** What the viewer reads traces from: a `TraceStore`, or your own object with the same two methods. */
export interface TraceViewerStore {
  traces(query?: { limit?: number }): readonly TraceSummary[];
  trace(traceId: string): TraceDetail | null;
  /** Shown on the page when present (a `TraceStore` has them). */
  readonly droppedTraces?: number;
  readonly droppedSpans?: number;
  readonly droppedEvents?: number;
}

/** One row of the per-user table. */
export interface TraceViewerUserUsage {
  readonly userId: string | null;
  readonly requests: number;
  readonly inputTokens: number;
  readonly outputTokens: number;
  readonly costUsd: number;
}

/** What the per-user table reads: a `UsageMeter`, or anything with `users()` (highest cost first). */
export interface TraceViewerMeter {
  users(): readonly TraceViewerUserUsage[];
}

/** Options of {@link createTraceViewer}. */
export interface TraceViewerOptions {
  /** Where the traces come from; give the same object to the bridge as its `traceSink`. */
  store: TraceViewerStore;
  /** Tokens and cost per user, for the page's per-user table. Default: no table. */
  meter?: TraceViewerMeter;
  /** The path the viewer answers under. Default `/_nerva/traces`. */
  basePath?: string;
  /**
   * Who may see the traces. Default {@link isLoopbackRequest}: clients on this machine that did
   * not come through a proxy. An `allow` that throws or rejects denies.
   */
  allow?: (req: IncomingMessage) => boolean | Promise<boolean>;
}

/**
 * A Node request handler serving the viewer under its `basePath`; requests outside it go to
 * `next` (Express, NestJS, Connect-style middleware) or are answered 404 without one.
 */
export interface TraceViewer {
  (req: IncomingMessage, res: ServerResponse, next?: (err?: unknown) => void): void;
  /** The path it answers under, e.g. `/_nerva/traces`. */
  readonly basePath: string;
}

const fn = <T>(label: string) =>
  z.custom<T>((v) => typeof v === "function", `must be a function (${label})`);
const OptionsSchema = z
  .object({
    store: z.custom<TraceViewerStore>(
      (v) =>
        typeof v === "object" &&
        v !== null &&
        typeof (v as TraceViewerStore).traces === "function" &&
        typeof (v as TraceViewerStore).trace === "function",
      "must be a TraceStore (an object with traces() and trace(id) methods)",
    ),
    meter: z
      .custom<TraceViewerMeter>(
        (v) =>
          typeof v === "object" &&
          v !== null &&
          typeof (v as TraceViewerMeter).users === "function",
        "must be a UsageMeter (an object with a users() method)",
      )
      .optional(),
    basePath: z
      .string()
      .regex(
        /^(\/[A-Za-z0-9._~-]+)+$/,
        'must be a path such as "/_nerva/traces" (no trailing slash; letters, digits, . _ ~ -)',
      )
      .default("/_nerva/traces"),
    allow: fn<TraceViewerOptions["allow"]>("req) => boolean | Promise<boolean>").optional(),
  })
  .strict();

const LOOPBACK = /^(127\.\d{1,3}\.\d{1,3}\.\d{1,3}|::1|::ffff:127\.\d{1,3}\.\d{1,3}\.\d{1,3})$/;
const PROXY_HEADERS = ["forwarded", "x-forwarded-for", "x-real-ip"];
/** A Host naming this machine: `localhost`, a 127.0.0.0/8 address or `[::1]`, with any port. */
const LOOPBACK_HOST =
  /^(?:localhost|127\.\d{1,3}\.\d{1,3}\.\d{1,3}|\[::1\]|\[::ffff:127\.\d{1,3}\.\d{1,3}\.\d{1,3}\])(?::\d{1,5})?$/i;

/**
 * The viewer's default `allow`: true for a connection from this machine (127.0.0.0/8, ::1) that
 * carries no proxy header (`Forwarded`, `X-Forwarded-For`, `X-Real-IP`) and whose `Host` (when
 * sent) names this machine (`localhost`, a loopback address): behind a reverse proxy on the same
 * machine every client looks local, so proxied requests are refused unless your own `allow`
 * checks who they are; and a web page whose name was rebound to 127.0.0.1 (DNS rebinding) sends
 * its own name as `Host`, so a browser cannot be used to read the traces.
 *
 * @example
 * createTraceViewer({ store, allow: (req) => isLoopbackRequest(req) || isAdmin(req) });
 */
export function isLoopbackRequest(req: IncomingMessage): boolean {
  if (!LOOPBACK.test(req.socket?.remoteAddress ?? "")) return false;
  // A page whose own name was rebound to 127.0.0.1 (DNS rebinding) sends that name as Host.
  const host = req.headers.host;
  if (host !== undefined && !LOOPBACK_HOST.test(host)) return false;
  return PROXY_HEADERS.every((h) => req.headers[h] === undefined);
}

const LIST_LIMIT = 1_000;
const USERS_LIMIT = 1_000;
const TRACE_ID = /^[0-9a-f]{32}$/;

/**
 * The trace viewer: one self-contained page (inline CSS and script, no CDN, no build step) and a
 * JSON API over a {@link TraceViewerStore}, as a `(req, res, next?)` handler for Express, NestJS
 * (`app.use`) or a Fastify route (`reply.hijack()`, then the raw request and response). The page
 * lists recent traces (time, root, duration, status, tokens, cost, user), draws the chosen one
 * as a waterfall (one bar per span, indented by depth, coloured by status, events as markers; a
 * click shows attributes and events) and, with a `meter`, a per-user table. Loopback only by
 * default. Every value from a trace is shown as text, never as HTML.
 *
 * API under `basePath`: `GET /api/traces?limit=&user=`, `GET /api/traces/:traceId`,
 * `GET /api/users`. Throws INVALID_OPTIONS for bad options.
 *
 * @example
 * const store = new TraceStore();
 * app.use(nervaMiddleware({ traceSink: store }));
 * app.use(createTraceViewer({ store })); // http://127.0.0.1:3000/_nerva/traces
 */
export function createTraceViewer(options: TraceViewerOptions): TraceViewer {
  const o = parseOrThrow(
    OptionsSchema,
    options,
    ErrorCode.INVALID_OPTIONS,
    "options",
    "createTraceViewer({ store: a TraceStore, meter?: a UsageMeter, basePath?: '/_nerva/traces', allow?: (req) => boolean }).",
  );
  const base = o.basePath;
  const allow = o.allow ?? isLoopbackRequest;

  async function serve(
    req: IncomingMessage,
    res: ServerResponse,
    path: string,
    query: string,
  ): Promise<void> {
    let allowed: boolean;
    try {
      allowed = (await allow(req)) === true;
    } catch {
      allowed = false; // an error deciding denies
    }
    if (!allowed) return fail(res, 403, "PERMISSION_DENIED", "Forbidden.");
    if (req.method !== "GET" && req.method !== "HEAD") {
      res.setHeader("allow", "GET, HEAD");
      return fail(res, 405, "INVALID_INPUT", "The trace viewer only answers GET.");
    }
    const rest = path.slice(base.length);
    if (rest === "" || rest === "/") return page(req, res);
    if (rest === "/api/traces") return list(req, res, new URLSearchParams(query));
    if (rest.startsWith("/api/traces/")) {
      const id = rest.slice("/api/traces/".length);
      if (!TRACE_ID.test(id))
        return fail(res, 400, "INVALID_INPUT", "A trace id is 32 lowercase hex digits.");
      const detail = o.store.trace(id);
      if (detail === null)
        return fail(res, 404, "NOT_FOUND", "No such trace in the store (unknown, or dropped).");
      return sendJson(req, res, 200, { ...detailForPage(detail), readAtMs: Date.now() });
    }
    if (rest === "/api/users") {
      const users = o.meter === undefined ? null : o.meter.users().slice(0, USERS_LIMIT);
      return sendJson(req, res, 200, { users });
    }
    fail(res, 404, "NOT_FOUND", "No such page of the trace viewer.");
  }

  function list(req: IncomingMessage, res: ServerResponse, params: URLSearchParams): void {
    const raw = params.get("limit");
    const limit = raw === null ? 200 : Number(raw);
    if (!Number.isInteger(limit) || limit < 1 || limit > LIST_LIMIT)
      return fail(res, 400, "INVALID_INPUT", `limit must be an integer from 1 to ${LIST_LIMIT}.`);
    const user = params.get("user");
    let traces = o.store.traces(user === null ? { limit } : { limit: LIST_LIMIT });
    if (user !== null) traces = traces.filter((t) => t.userId === user).slice(0, limit);
    sendJson(req, res, 200, {
      traces: traces.map(summaryForPage),
      droppedTraces: o.store.droppedTraces ?? 0,
      droppedSpans: o.store.droppedSpans ?? 0,
      droppedEvents: o.store.droppedEvents ?? 0,
      meter: o.meter !== undefined,
    });
  }

  function page(req: IncomingMessage, res: ServerResponse): void {
    const nonce = randomBytes(16).toString("base64");
    res.writeHead(200, {
      "content-type": "text/html; charset=utf-8",
      "cache-control": "no-store",
      "x-content-type-options": "nosniff",
      "x-frame-options": "DENY",
      "referrer-policy": "no-referrer",
      // Only this response's own inline script and style run: even a value that slipped through
      // as markup could not execute.
      "content-security-policy": `default-src 'none'; script-src 'nonce-${nonce}'; style-src 'nonce-${nonce}'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`,
    });
    res.end(req.method === "HEAD" ? undefined : renderPage(base, nonce));
  }

  function fail(res: ServerResponse, status: number, code: string, message: string): void {
    const body: ApiError = { error: { code, message } };
    sendJson(null, res, status, body);
  }

  const viewer = (req: IncomingMessage, res: ServerResponse, next?: (err?: unknown) => void) => {
    // Express strips a mount path from req.url and keeps the whole one in originalUrl.
    const full = (req as { originalUrl?: string }).originalUrl ?? req.url ?? "/";
    const q = full.indexOf("?");
    const path = q === -1 ? full : full.slice(0, q);
    if (path !== base && !path.startsWith(`${base}/`)) {
      if (next !== undefined) return next();
      return fail(res, 404, "NOT_FOUND", "Not found.");
    }
    serve(req, res, path, q === -1 ? "" : full.slice(q + 1)).catch(() => {
      // The store or meter failed: the client learns nothing about why.
      if (!res.headersSent) fail(res, 500, "INTERNAL", "The trace viewer failed to answer.");
      else res.destroy();
    });
  };
  return Object.assign(viewer, { basePath: base }) as TraceViewer;
}
