// Who a request runs for: the request shape the bridges read, the identity a `resolve` option
// returns, the default `resolve` (req.user, or trusted identity headers) and the defaults filled in
// before an ExecContext is created. Options themselves are in options.ts.
import type { IncomingHttpHeaders } from "node:http";
import { z } from "zod";
import { ErrorCode, NervaError, parseOrThrow } from "../errors.js";
import { Permissions } from "../types/permissions.js";
import { SCOPES, type Scope } from "../types/status.js";
import type { ResolvedHttpOptions } from "./options.js";

/**
 * What the bridges need from a framework request: its headers and, once the app's own
 * authentication ran, `user` (set by passport, `@fastify/jwt`, a NestJS guard or your middleware).
 *
 * @example
 * const req: HttpRequestLike = { headers: { traceparent }, user: { id: "u1" } };
 */
export interface HttpRequestLike {
  readonly headers: IncomingHttpHeaders;
  readonly user?: unknown;
}

/**
 * Who a request runs for, as returned by a `resolve` option. Omitted fields get the bridge's
 * defaults: no session, no roles, the `permissions` option (or `anonymousPermissions` when
 * `userId` is `null`) and the `memoryScope` option.
 *
 * @example
 * const identity: NervaIdentity = { userId: "u1", roles: ["admin"], allowedTools: ["search"] };
 */
export interface NervaIdentity {
  /** `null` for an anonymous request. Never a bearer token: use the authenticated subject. */
  readonly userId: string | null;
  readonly sessionId?: string | null;
  readonly roles?: readonly string[];
  /** `null`: every tool. `[]`: none. Omitted: the bridge's `permissions` option decides. */
  readonly allowedTools?: readonly string[] | null;
  /** `null`: every agent. `[]`: none. Omitted: the bridge's `permissions` option decides. */
  readonly allowedAgents?: readonly string[] | null;
  readonly memoryScope?: Scope;
}

/**
 * Maps a framework request (after the app's authentication ran) to a {@link NervaIdentity}.
 * Must be synchronous: do lookups (database roles, ...) in your auth layer and put the result on
 * `req.user`. Return `null` for an anonymous request; throw to refuse it (the error's own HTTP
 * status is kept, anything else is a 500 — never an anonymous context).
 *
 * @example
 * const resolve: ResolveIdentity<Request> = (req) => (req.user ? { userId: req.user.id } : null);
 */
export type ResolveIdentity<Req = HttpRequestLike> = (req: Req) => NervaIdentity | null | undefined;

/**
 * A request's identity with every default filled in, ready for `ExecContext.create`.
 *
 * @example
 * const { userId, permissions } = resolveIdentity(req, parseHttpOptions());
 */
export interface ResolvedIdentity {
  readonly userId: string | null;
  readonly sessionId: string | null;
  readonly permissions: Permissions;
  readonly memoryScope: Scope;
}

const names = z.array(z.string().min(1).max(256));

const IdentitySchema = z
  .object({
    userId: z.string().min(1).max(256).nullable(),
    sessionId: z.string().min(1).max(256).nullable().optional(),
    roles: names.optional(),
    allowedTools: names.nullable().optional(),
    allowedAgents: names.nullable().optional(),
    memoryScope: z.enum(SCOPES).optional(),
  })
  .strict();

const ANONYMOUS_IDENTITY: NervaIdentity = Object.freeze({ userId: null });
const SCOPE_SET: ReadonlySet<string> = new Set(SCOPES);

const isName = (v: unknown): boolean => typeof v === "string" && v.length > 0 && v.length <= 256;
const isNameList = (v: unknown): boolean => Array.isArray(v) && v.every(isName);
const IDENTITY_KEYS: ReadonlySet<string> = new Set([
  "userId",
  "sessionId",
  "roles",
  "allowedTools",
  "allowedAgents",
  "memoryScope",
]);

/** The same rules as IdentitySchema, without zod's cost on every request. */
function isIdentity(v: unknown): v is NervaIdentity {
  if (typeof v !== "object" || v === null || Array.isArray(v)) return false;
  const o = v as Record<string, unknown>;
  for (const key in o) if (!IDENTITY_KEYS.has(key)) return false;
  return (
    (o.userId === null || isName(o.userId)) &&
    (o.sessionId === undefined || o.sessionId === null || isName(o.sessionId)) &&
    (o.roles === undefined || isNameList(o.roles)) &&
    (o.allowedTools === undefined || o.allowedTools === null || isNameList(o.allowedTools)) &&
    (o.allowedAgents === undefined || o.allowedAgents === null || isNameList(o.allowedAgents)) &&
    (o.memoryScope === undefined || SCOPE_SET.has(o.memoryScope as string))
  );
}

/**
 * `base` with `roles`. Permissions are immutable, so the few role sets an app has are built once
 * and shared (a bounded cache: beyond it, a new value per request).
 */
const roleCache = new WeakMap<Permissions, Map<string, Permissions>>();
const ROLE_CACHE_LIMIT = 256;
function withRoles(base: Permissions, roles: readonly string[] | undefined): Permissions {
  if (roles === undefined || sameList(roles, base.roles)) return base;
  let cache = roleCache.get(base);
  if (cache === undefined) roleCache.set(base, (cache = new Map()));
  // One role (the common case) keys by itself; a JSON array key can never start with "1:".
  const key = roles.length === 1 ? `1:${roles[0] as string}` : JSON.stringify(roles);
  let permissions = cache.get(key);
  if (permissions === undefined) {
    permissions = base.with({ roles });
    if (cache.size < ROLE_CACHE_LIMIT) cache.set(key, permissions);
  }
  return permissions;
}

function header(headers: IncomingHttpHeaders, name: string): string | undefined {
  const value = headers[name];
  const first = Array.isArray(value) ? value[0] : value;
  return first === undefined || first === "" ? undefined : first;
}

function stringList(value: unknown): string[] | undefined {
  if (typeof value === "string") return value === "" ? [] : [value];
  if (!Array.isArray(value)) return undefined;
  return value.filter((v): v is string => typeof v === "string" && v.length > 0);
}

function sameList(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((v, i) => v === b[i]);
}

function idOf(value: unknown): string | undefined {
  if (typeof value === "string" && value.length > 0) return value;
  if (typeof value === "number" && Number.isSafeInteger(value)) return String(value);
  return undefined;
}

/**
 * The default `resolve`: the user the app's auth layer put on `req.user` — its `id`, `sub` or
 * `userId`; `roles` (or a single `role`); `sessionId` or `sid`; optional `allowedTools` and
 * `allowedAgents` lists. Without `req.user` the request is anonymous, unless `trustIdentityHeaders`
 * is on and `x-user-id` is present. Never reads the `Authorization` header.
 *
 * @example
 * defaultResolve({ headers: {}, user: { sub: "u1", roles: ["admin"] } }, false);
 * // → { userId: "u1", roles: ["admin"], sessionId: null }
 */
export function defaultResolve(req: HttpRequestLike, trustIdentityHeaders: boolean): NervaIdentity {
  const user = req.user;
  if (user !== undefined && user !== null) {
    if (typeof user !== "object") {
      throw new NervaError(
        ErrorCode.INTERNAL,
        `req.user is a ${typeof user}, not an object: the default resolve needs { id | sub | userId }. Set req.user to the authenticated user or pass a resolve(req) option.`,
      );
    }
    const u = user as Record<string, unknown>;
    const userId = idOf(u.id) ?? idOf(u.sub) ?? idOf(u.userId);
    if (userId === undefined) {
      throw new NervaError(
        ErrorCode.INTERNAL,
        "req.user has no usable id: the default resolve reads req.user.id, .sub or .userId (a string or an integer). Fix your auth layer or pass a resolve(req) option.",
      );
    }
    const identity: {
      userId: string;
      sessionId: string | null;
      roles: string[];
      allowedTools?: string[] | null;
      allowedAgents?: string[] | null;
    } = {
      userId,
      sessionId: idOf(u.sessionId) ?? idOf(u.sid) ?? null,
      roles: stringList(u.roles) ?? stringList(u.role) ?? [],
    };
    const tools = stringList(u.allowedTools);
    if (tools !== undefined) identity.allowedTools = tools;
    const agents = stringList(u.allowedAgents);
    if (agents !== undefined) identity.allowedAgents = agents;
    return identity;
  }
  if (!trustIdentityHeaders) return { userId: null, sessionId: null };
  const roles = header(req.headers, "x-user-roles");
  return {
    userId: header(req.headers, "x-user-id") ?? null,
    sessionId: header(req.headers, "x-session-id") ?? null,
    roles:
      roles === undefined
        ? []
        : roles
            .split(",")
            .map((r) => r.trim())
            .filter((r) => r.length > 0),
  };
}

/**
 * Runs `resolve` (or the default) and fills in every default. Throws NervaError UNAUTHENTICATED
 * when `requireAuth` is on and there is no user; INTERNAL when `resolve` returns something that is
 * not an identity (INVALID_INPUT when the bad value came from a trusted identity header).
 *
 * @example
 * const identity = resolveIdentity(req, parseHttpOptions({ requireAuth: true }));
 */
export function resolveIdentity<Req extends HttpRequestLike>(
  req: Req,
  options: ResolvedHttpOptions,
): ResolvedIdentity {
  const custom = options.resolve as ResolveIdentity<Req> | undefined;
  const raw =
    custom === undefined ? defaultResolve(req, options.trustIdentityHeaders) : custom(req);
  if (
    raw !== null &&
    typeof raw === "object" &&
    typeof (raw as { then?: unknown }).then === "function"
  ) {
    throw new NervaError(
      ErrorCode.INTERNAL,
      "resolve(req) returned a promise: it must be synchronous. Do asynchronous lookups in your auth layer and put the result on req.user.",
    );
  }
  const fromHeaders = custom === undefined && req.user == null;
  // Hot path: a hand-written check; zod runs only to explain a value that fails it.
  const identity =
    raw === null || raw === undefined
      ? ANONYMOUS_IDENTITY
      : isIdentity(raw)
        ? raw
        : parseOrThrow(
            IdentitySchema,
            raw,
            fromHeaders ? ErrorCode.INVALID_INPUT : ErrorCode.INTERNAL,
            fromHeaders ? "identity headers" : "identity",
            fromHeaders
              ? "Send x-user-id / x-session-id of at most 256 characters."
              : "resolve(req) must return { userId: string | null, sessionId?, roles?, allowedTools?, allowedAgents?, memoryScope? } or null.",
          );
  if (identity.userId === null && options.requireAuth) {
    throw new NervaError(
      ErrorCode.UNAUTHENTICATED,
      "Authentication required: this endpoint needs an authenticated user.",
    );
  }
  const base = identity.userId === null ? options.anonymousPermissions : options.permissions;
  const permissions =
    identity.allowedTools === undefined && identity.allowedAgents === undefined
      ? withRoles(base, identity.roles)
      : base.with({
          roles: identity.roles ?? base.roles,
          allowedTools: identity.allowedTools,
          allowedAgents: identity.allowedAgents,
        });
  return {
    userId: identity.userId,
    sessionId: identity.sessionId ?? null,
    permissions,
    memoryScope: identity.memoryScope ?? options.memoryScope,
  };
}
