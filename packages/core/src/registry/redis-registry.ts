import { z } from "zod";
import type { ExecContext } from "../context/exec-context.js";
import { ErrorCode, NervaError, parseOrThrow } from "../errors.js";
import {
  RedisConnection,
  oneConnection,
  redisConnectionFields,
} from "../internal/redis-connection.js";
import type { Attributes } from "../types/trace.js";
import {
  DISCOVER,
  RECORD,
  REGISTER,
  SET_HEALTH,
  UNREGISTER,
  entryKey,
  indexKey,
  memberOf,
} from "./redis/layout.js";
import {
  RegistryOptionsSchema,
  byKindThenName,
  entryView,
  inSpan,
  matches,
  notFound,
  parseEntry,
  parseFilter,
  parseHealth,
  parseKey,
  parseRecord,
  statsView,
  visible,
  type ParsedEntryInit,
  type StatsState,
} from "./shared.js";
import {
  RegistryKind,
  type DiscoverFilter,
  type HealthStatus,
  type InvocationRecord,
  type InvocationStats,
  type Registry,
  type RegistryEntry,
  type RegistryEntryInit,
} from "./types.js";

export const RedisRegistryOptionsSchema = RegistryOptionsSchema.extend(
  redisConnectionFields("nerva:registry:"),
)
  .strict()
  .refine(...oneConnection);
/** Options of {@link RedisRegistry}. */
export type RedisRegistryOptions = z.input<typeof RedisRegistryOptionsSchema>;

const KINDS = [RegistryKind.AGENT, RegistryKind.TOOL, RegistryKind.PLUGIN] as const;

/** An entry's hash, as HGETALL gives it: field, value, field, value, ... */
type Fields = string[];

interface Stored {
  readonly entry: RegistryEntry;
  readonly stats: StatsState;
}

function parseFields(fields: Fields): Stored {
  const f = new Map<string, string>();
  for (let i = 0; i + 1 < fields.length; i += 2)
    f.set(fields[i] as string, fields[i + 1] as string);
  const num = (name: string): number => Number(f.get(name) ?? 0);
  const maybe = (name: string): number | null => (f.has(name) ? Number(f.get(name)) : null);
  const stats: StatsState = {
    count: num("count"),
    failures: num("failures"),
    consecutiveFailures: num("consecutiveFailures"),
    totalLatencyMs: num("totalLatencyMs"),
    minLatencyMs: maybe("minLatencyMs"),
    maxLatencyMs: maybe("maxLatencyMs"),
    lastLatencyMs: maybe("lastLatencyMs"),
    lastInvokedAt: maybe("lastInvokedAt"),
    lastError: f.get("lastError") ?? null,
    health: (f.get("health") ?? "unknown") as HealthStatus,
    healthDetail: f.get("healthDetail") ?? null,
    healthAuto: f.get("healthAuto") !== "0",
  };
  const init = JSON.parse(f.get("init") ?? "{}") as ParsedEntryInit;
  return { entry: entryView(init, stats, num("registeredAt"), num("updatedAt")), stats };
}

/** A script's reply: the entry's fields, or null (nil) when there is no such entry. */
const storedOf = (reply: unknown): Stored | null =>
  Array.isArray(reply) && reply.length > 0 ? parseFields(reply as Fields) : null;

/**
 * A registry kept in Redis, so every replica of an app sees the same entries, health and stats.
 * Each entry is one hash; an invocation is added by one Lua script that updates the running
 * aggregates and the automatic health rule together, so concurrent replicas never lose a count.
 * Names are URI-encoded into the keys. Needs the optional package `ioredis`.
 *
 * While Redis cannot be reached every call rejects with NervaError UNAVAILABLE within
 * `timeoutSeconds`; the registry works again as soon as Redis is back.
 *
 * @example
 * import { RedisRegistry } from "@nerva/core/redis";
 * const registry = new RedisRegistry({ url: "redis://127.0.0.1:6379", unhealthyAfterFailures: 3 });
 */
export class RedisRegistry implements Registry {
  /** Prefix of every key this registry writes. */
  readonly prefix: string;
  readonly #conn: RedisConnection;
  readonly #threshold: number;
  #closed = false;

  constructor(options: RedisRegistryOptions = {}) {
    const o = parseOrThrow(
      RedisRegistryOptionsSchema,
      options,
      ErrorCode.INVALID_OPTIONS,
      "options",
      'Pass { url: "redis://host:6379" } or { client: an ioredis client }, and optionally prefix, timeoutSeconds and unhealthyAfterFailures.',
    );
    this.prefix = o.prefix;
    this.#threshold = o.unhealthyAfterFailures;
    this.#conn = new RedisConnection(o, "RedisRegistry", "registry");
  }

  async register(entry: RegistryEntryInit, ctx: ExecContext): Promise<RegistryEntry> {
    const init = parseEntry(entry);
    const keys = [entryKey(this.prefix, init.kind, init.name), indexKey(this.prefix, init.kind)];
    const args = [JSON.stringify(init), Date.now(), memberOf(init.name)];
    return this.#op(ctx, "register", { kind: init.kind, name: init.name }, async (run) => {
      const stored = storedOf(await run(REGISTER, keys, args));
      if (stored === null) throw new NervaError(ErrorCode.INTERNAL, "register wrote nothing.");
      return stored.entry;
    });
  }

  async unregister(kind: RegistryKind, name: string, ctx: ExecContext): Promise<boolean> {
    parseKey(kind, name);
    const keys = [entryKey(this.prefix, kind, name), indexKey(this.prefix, kind)];
    return this.#op(
      ctx,
      "unregister",
      { kind, name },
      async (run) => (await run(UNREGISTER, keys, [memberOf(name)])) === 1,
    );
  }

  async get(kind: RegistryKind, name: string, ctx: ExecContext): Promise<RegistryEntry | null> {
    parseKey(kind, name);
    return this.#op(ctx, "get", { kind, name }, async () => {
      const stored = await this.#load(kind, name);
      return stored !== null && visible(stored.entry, ctx) ? stored.entry : null;
    });
  }

  async discover(ctx: ExecContext, filter: DiscoverFilter = {}): Promise<RegistryEntry[]> {
    const f = parseFilter(filter);
    const kinds = f.kind === undefined ? KINDS : [f.kind];
    const keys = kinds.map((k) => indexKey(this.prefix, k));
    return this.#op(ctx, "discover", { kind: f.kind ?? "any" }, async (run) => {
      const reply = (await run(DISCOVER, keys, [`${this.prefix}entry:`, ...kinds])) as Fields[];
      return reply
        .map((fields) => parseFields(fields).entry)
        .filter((e) => matches(e, f) && visible(e, ctx))
        .sort(byKindThenName);
    });
  }

  async setHealth(
    kind: RegistryKind,
    name: string,
    health: HealthStatus,
    ctx: ExecContext,
    detail?: string,
  ): Promise<RegistryEntry> {
    parseKey(kind, name);
    const h = parseHealth(health);
    const args = [h, detail === undefined ? "0" : "1", detail ?? "", Date.now()];
    return this.#op(ctx, "set_health", { kind, name, health: h }, async (run) => {
      const stored = storedOf(await run(SET_HEALTH, [entryKey(this.prefix, kind, name)], args));
      if (stored === null) throw notFound(kind, name);
      return stored.entry;
    });
  }

  async recordInvocation(
    kind: RegistryKind,
    name: string,
    record: InvocationRecord,
    ctx: ExecContext,
  ): Promise<InvocationStats> {
    parseKey(kind, name);
    const r = parseRecord(record);
    const args = [
      r.ok ? "1" : "0",
      r.latencyMs,
      Date.now(),
      this.#threshold,
      r.error === undefined ? "0" : "1",
      r.error ?? "",
    ];
    return this.#op(ctx, "record", { kind, name, ok: r.ok }, async (run) => {
      const stored = storedOf(await run(RECORD, [entryKey(this.prefix, kind, name)], args));
      if (stored === null) throw notFound(kind, name);
      return statsView(stored.stats);
    });
  }

  async stats(kind: RegistryKind, name: string, ctx: ExecContext): Promise<InvocationStats | null> {
    parseKey(kind, name);
    return this.#op(ctx, "stats", { kind, name }, async () => {
      const stored = await this.#load(kind, name);
      return stored !== null && visible(stored.entry, ctx) ? statsView(stored.stats) : null;
    });
  }

  /** Closes the client this registry opened; a client passed in `options.client` stays open. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#conn.close();
  }

  #load(kind: string, name: string): Promise<Stored | null> {
    const key = entryKey(this.prefix, kind, name);
    return this.#conn.run(async (redis) => storedOf(await redis.call("HGETALL", key)));
  }

  /** One operation in its span, refused once closed; `run` sends a script within the timeout. */
  #op<T>(
    ctx: ExecContext,
    op: string,
    attrs: Attributes,
    fn: (
      run: (script: typeof REGISTER, keys: string[], args: (string | number)[]) => Promise<unknown>,
    ) => Promise<T>,
  ): Promise<T> {
    return inSpan(ctx, op, attrs, () => {
      if (this.#closed) {
        throw new NervaError(
          ErrorCode.INTERNAL,
          "RedisRegistry is closed; create a new one to keep using it.",
        );
      }
      return fn((script, keys, args) =>
        this.#conn.run((redis) => this.#conn.script(redis, script, keys, args)),
      );
    });
  }
}
