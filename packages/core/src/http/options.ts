// The options every bridge takes (NervaHttpOptions), their zod schema and their defaults.
// How a request's identity is resolved with them is in identity.ts.
import { z } from "zod";
import { ErrorCode, parseOrThrow } from "../errors.js";
import { safeListener } from "../internal/report.js";
import { Permissions, type PermissionsInit } from "../types/permissions.js";
import { SCOPES, type Scope } from "../types/status.js";
import type { IncomingMessage } from "node:http";
import { isTraceSink, type TraceSink } from "../tracing/sink.js";
import type { HttpRequestLike, ResolveIdentity } from "./identity.js";

/**
 * Called with every error the bridge answers with a 5xx status (log it; the client sees no detail).
 *
 * @example
 * const onError: HttpErrorListener = (error, requestId) => logger.error({ error, requestId });
 */
export type HttpErrorListener = (error: unknown, requestId: string | null) => void;

/**
 * Where a bridge writes what went wrong inside a request that the client is not told: one call
 * per failure, a one-line `message` and the same facts as `fields` for structured loggers.
 *
 * @example
 * const logger: NervaLogger = { error: (message, fields) => pino.error(fields, message) };
 */
export interface NervaLogger {
  error(message: string, fields: Readonly<Record<string, unknown>>): void;
}

/**
 * Options shared by `@nerva/express`, `@nerva/fastify` and `@nerva/nestjs`.
 *
 * @example
 * const options: NervaHttpOptions = {
 *   requireAuth: true,
 *   timeoutSeconds: 30,
 *   resolve: (req) => ({ userId: (req.user as { id: string }).id, roles: ["member"] }),
 * };
 */
export interface NervaHttpOptions<Req = HttpRequestLike> {
  /** Defaults to {@link defaultResolve}: `req.user` (`id`, `sub` or `userId`; `roles`...) or anonymous. */
  resolve?: ResolveIdentity<Req>;
  /** Answer 401 (NervaError UNAUTHENTICATED) when the request has no user. Default `false`. */
  requireAuth?: boolean;
  /**
   * Take `x-user-id`, `x-user-roles` (comma-separated) and `x-session-id` from the request when
   * `req.user` is absent. Only behind a gateway that authenticates and strips them. Default `false`.
   */
  trustIdentityHeaders?: boolean;
  /** Reuse the client's request id header (when well-formed) instead of a fresh one. Default `false`. */
  trustRequestId?: boolean;
  /** Header the request id is read from (with `trustRequestId`) and returned in. Default `x-request-id`. */
  requestIdHeader?: string;
  /** Deadline of each request's context, in seconds. Default `null`: none of its own. */
  timeoutSeconds?: number | null;
  /** Memory scope of each context unless `resolve` says otherwise. Default `"session"`. */
  memoryScope?: Scope;
  /** Granted to authenticated users whose identity does not list tools/agents. Default: everything. */
  permissions?: PermissionsInit;
  /** Granted to anonymous requests. Default: nothing (no tool, no agent, no role). */
  anonymousPermissions?: PermissionsInit;
  /** Cancel the context (`ctx.signal` aborts) when the client disconnects early. Default `true`. */
  cancelOnDisconnect?: boolean;
  /** Receives errors answered with a 5xx. Default: `logger.error` with the request id. */
  onError?: HttpErrorListener;
  /**
   * Where internal failures are logged: each request whose agent failed (one line with the
   * request id, handler, status, code and the internal message the client does not see), and
   * 5xx errors unless `onError` is set. Default: one line on `console.error`; `false`: nothing.
   */
  logger?: NervaLogger | false;
  /** Told of every span and event of every request's context (see `TraceSink`). Default: none. */
  traceSink?: TraceSink;
  /**
   * Where a request's parent trace comes from, instead of its `traceparent` header: e.g.
   * `@nerva/otel`'s `activeTraceparent`, to nest Nerva's spans under the HTTP server span of the
   * app's own OpenTelemetry instrumentation. Called when the request starts. Default: the header.
   */
  traceparentFrom?: (req: IncomingMessage) => string | null | undefined;
}

const fn = <T>(label: string) =>
  z.custom<T>((v) => typeof v === "function", `must be a function (${label})`);
const names = z.array(z.string().min(1).max(256));
const PermissionsInitSchema = z
  .object({
    roles: names.optional(),
    allowedTools: names.nullable().optional(),
    allowedAgents: names.nullable().optional(),
  })
  .strict();

/**
 * zod schema of {@link NervaHttpOptions}.
 *
 * @example
 * NervaHttpOptionsSchema.safeParse({ requireAuth: true }).success; // true
 */
export const NervaHttpOptionsSchema = z
  .object({
    resolve: fn<ResolveIdentity<unknown>>("req) => NervaIdentity | null").optional(),
    requireAuth: z.boolean().default(false),
    trustIdentityHeaders: z.boolean().default(false),
    trustRequestId: z.boolean().default(false),
    requestIdHeader: z
      .string()
      .regex(/^[a-z0-9-]{1,64}$/, "must be a lowercase header name such as x-request-id")
      .default("x-request-id"),
    timeoutSeconds: z.number().positive().finite().nullable().default(null),
    memoryScope: z.enum(SCOPES).default("session"),
    permissions: PermissionsInitSchema.optional(),
    anonymousPermissions: PermissionsInitSchema.optional(),
    cancelOnDisconnect: z.boolean().default(true),
    onError: fn<HttpErrorListener>("error, requestId) => void").optional(),
    logger: z
      .union([
        z.literal(false),
        z.custom<NervaLogger>(
          (v) =>
            typeof v === "object" &&
            v !== null &&
            typeof (v as { error?: unknown }).error === "function",
          "must be false or a logger with an error(message, fields) method",
        ),
      ])
      .optional(),
    traceSink: z
      .custom<TraceSink>(
        isTraceSink,
        "must be a TraceSink (an object with an onSpanEnd(span) method)",
      )
      .optional(),
    traceparentFrom: fn<(req: IncomingMessage) => string | null | undefined>(
      "req) => string | null | undefined",
    ).optional(),
  })
  .strict();

/**
 * Validated options with defaults applied.
 *
 * @example
 * const { requestIdHeader, requireAuth } = parseHttpOptions({ requireAuth: true });
 */
export interface ResolvedHttpOptions {
  readonly resolve: ResolveIdentity<never> | undefined;
  readonly requireAuth: boolean;
  readonly trustIdentityHeaders: boolean;
  readonly trustRequestId: boolean;
  readonly requestIdHeader: string;
  readonly timeoutSeconds: number | null;
  readonly memoryScope: Scope;
  readonly permissions: Permissions;
  readonly anonymousPermissions: Permissions;
  readonly cancelOnDisconnect: boolean;
  readonly onError: HttpErrorListener;
  readonly logger: NervaLogger | null;
  readonly traceSink: TraceSink | null;
  readonly traceparentFrom: ((req: IncomingMessage) => string | null | undefined) | null;
}

const ANONYMOUS = Permissions.NONE;

/** The default logger: one line on stderr per failure. */
export const consoleLogger: NervaLogger = Object.freeze({
  error(message: string, fields: Readonly<Record<string, unknown>>): void {
    const error = fields.error;
    // A 5xx is a bug of the server: its stack is what the line is for.
    if (error instanceof Error) console.error(`[nerva] ${message}`, error);
    else console.error(`[nerva] ${message}`);
  },
});

/** `logger` made safe to call from a response's `close` event: a throw becomes one warning. */
function safeLogger(logger: NervaLogger): NervaLogger {
  const error = safeListener(
    (message: unknown, fields: Readonly<Record<string, unknown>>) =>
      logger.error(message as string, fields),
    "the bridge's logger",
  );
  return { error };
}

function reportTo(logger: NervaLogger | null): HttpErrorListener {
  if (logger === null) return () => undefined;
  return (error, requestId) =>
    logger.error(`request ${requestId ?? "(no id)"} failed`, { requestId, error });
}

/**
 * Validates bridge options; throws NervaError INVALID_OPTIONS naming each bad field.
 *
 * @example
 * const resolved = parseHttpOptions({ requireAuth: true });
 */
export function parseHttpOptions<Req>(options: NervaHttpOptions<Req> = {}): ResolvedHttpOptions {
  const o = parseOrThrow(
    NervaHttpOptionsSchema,
    options,
    ErrorCode.INVALID_OPTIONS,
    "options",
    "See NervaHttpOptions: resolve(req) function, requireAuth/trustIdentityHeaders/trustRequestId booleans, timeoutSeconds > 0, memoryScope user|session|agent|global.",
  );
  const logger = o.logger === false ? null : safeLogger(o.logger ?? consoleLogger);
  return Object.freeze({
    resolve: o.resolve as ResolveIdentity<never> | undefined,
    traceSink: o.traceSink ?? null,
    traceparentFrom: o.traceparentFrom ?? null,
    requireAuth: o.requireAuth,
    trustIdentityHeaders: o.trustIdentityHeaders,
    trustRequestId: o.trustRequestId,
    requestIdHeader: o.requestIdHeader,
    timeoutSeconds: o.timeoutSeconds,
    memoryScope: o.memoryScope,
    permissions:
      o.permissions === undefined ? Permissions.UNRESTRICTED : Permissions.create(o.permissions),
    anonymousPermissions:
      o.anonymousPermissions === undefined ? ANONYMOUS : Permissions.create(o.anonymousPermissions),
    cancelOnDisconnect: o.cancelOnDisconnect,
    // Called from request and stream callbacks: an onError that throws must not end the process.
    onError: safeListener(o.onError ?? reportTo(logger), "the bridge's onError"),
    logger,
  });
}
