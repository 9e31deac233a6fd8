import { randomUUID } from "node:crypto";
import { z } from "zod";
import type { ExecContext } from "../context/exec-context.js";
import { ErrorCode, parseOrThrow } from "../errors.js";
import { checkUntrustedJson } from "../internal/json-limits.js";
import { checkContext } from "../runtime/guard.js";
import type { JsonValue } from "../types/agent.js";
import { SCOPES } from "../types/status.js";
import { embedChecked } from "./embed.js";
import { InMemoryMemoryStore, METADATA_FIX } from "./in-memory-store.js";
import { memoryNamespace } from "./namespace.js";
import {
  MemoryKind,
  type EmbedFn,
  type Memory,
  type MemoryEventInit,
  type MemoryItem,
  type MemoryQuery,
  type MemoryRecall,
  type MemoryStore,
} from "./types.js";

const limit = (max: number) => z.number().int().min(0).max(max);

export const TieredMemoryOptionsSchema = z
  .object({
    store: z
      .custom<MemoryStore>(
        (v) =>
          typeof v === "object" &&
          v !== null &&
          ["write", "read", "close"].every(
            (m) => typeof (v as Record<string, unknown>)[m] === "function",
          ),
        "must implement MemoryStore (write, read, close)",
      )
      .optional(),
    embed: z.custom<EmbedFn>((v) => typeof v === "function", "must be a function").optional(),
    hotTurns: z.number().int().min(1).max(10_000).default(20),
    warmLimit: limit(1000).default(20),
    coldLimit: limit(100).default(5),
    minScore: z.number().min(-1).max(1).default(-1),
    archiveTurns: z.boolean().default(false),
  })
  .strict()
  .refine((o) => !o.archiveTurns || o.embed !== undefined, {
    path: ["archiveTurns"],
    message: "needs an embed function (turns are archived into the similarity tier)",
  });
/** Options of {@link TieredMemory}. */
export type TieredMemoryOptions = z.input<typeof TieredMemoryOptionsSchema>;

const json = z.json();
const EMPTY_METADATA: Readonly<Record<string, JsonValue>> = Object.freeze({});
const isEmpty = (o: object): boolean => {
  for (const _ in o) return false;
  return true;
};

export const EventSchema = z
  .object({
    kind: z.enum([MemoryKind.TURN, MemoryKind.FACT, MemoryKind.EPISODE]).default(MemoryKind.TURN),
    content: z.string().min(1).max(100_000),
    role: z.enum(["user", "assistant", "system", "tool"]).optional(),
    key: z.string().min(1).max(256).optional(),
    metadata: z.record(z.string(), json).default({}),
    scope: z.enum(SCOPES).optional(),
  })
  .strict()
  .refine((e) => e.role === undefined || e.kind === MemoryKind.TURN, {
    path: ["role"],
    message: 'only turns have a role; drop it or use kind "turn"',
  })
  .refine((e) => e.key === undefined || e.kind === MemoryKind.FACT, {
    path: ["key"],
    message: 'only facts have a key; drop it or use kind "fact"',
  });

type ParsedEvent = z.output<typeof EventSchema>;
const EVENT_KEYS = new Set(["kind", "content", "role", "key", "metadata", "scope"]);
const KINDS: ReadonlySet<unknown> = new Set([MemoryKind.TURN, MemoryKind.FACT, MemoryKind.EPISODE]);
const ROLES: ReadonlySet<unknown> = new Set(["user", "assistant", "system", "tool"]);
const SCOPE_SET: ReadonlySet<unknown> = new Set(SCOPES);

/**
 * The common, plainly valid event (no metadata) without a schema run; `null` sends everything
 * else through {@link EventSchema}, which also produces the field-naming errors.
 */
export function quickEvent(v: unknown): ParsedEvent | null {
  if (typeof v !== "object" || v === null) return null;
  for (const k in v) if (!EVENT_KEYS.has(k)) return null;
  const e = v as Record<string, unknown>;
  const kind = e["kind"] === undefined ? MemoryKind.TURN : e["kind"];
  const { content, role, key, scope } = e;
  if (e["metadata"] !== undefined || !KINDS.has(kind)) return null;
  if (typeof content !== "string" || content.length === 0 || content.length > 100_000) return null;
  if (role !== undefined && (kind !== MemoryKind.TURN || !ROLES.has(role))) return null;
  if (
    key !== undefined &&
    (kind !== MemoryKind.FACT || typeof key !== "string" || key.length === 0 || key.length > 256)
  ) {
    return null;
  }
  if (scope !== undefined && !SCOPE_SET.has(scope)) return null;
  return {
    kind: kind as ParsedEvent["kind"],
    content,
    metadata: {},
    ...(role === undefined ? {} : { role: role as ParsedEvent["role"] }),
    ...(key === undefined ? {} : { key: key as string }),
    ...(scope === undefined ? {} : { scope: scope as ParsedEvent["scope"] }),
  };
}

/**
 * Validates an event through {@link EventSchema}. Metadata is checked for depth and size first,
 * iteratively: the schema (and the store's serialisation) recurse, and deep enough nesting would
 * overflow the stack there.
 */
function parseEvent(event: unknown): ParsedEvent {
  if (typeof event === "object" && event !== null && "metadata" in event) {
    checkUntrustedJson((event as { metadata: unknown }).metadata, "event.metadata", METADATA_FIX);
  }
  return parseOrThrow(
    EventSchema,
    event,
    ErrorCode.INVALID_INPUT,
    "event",
    'Pass { content: string, kind?: "turn" | "fact" | "episode", role?, key?, metadata? }.',
  );
}

const QuerySchema = z
  .object({
    text: z.string().max(100_000).optional(),
    tiers: z
      .array(z.enum(["hot", "warm", "cold"]))
      .min(1)
      .optional(),
    hotLimit: limit(10_000).optional(),
    warmLimit: limit(1000).optional(),
    coldLimit: limit(100).optional(),
    scope: z.enum(SCOPES).optional(),
  })
  .strict();

/**
 * Memory in three tiers over a pluggable {@link MemoryStore} (in-memory by default, SQLite from
 * `@nerva/core/sqlite`):
 * - **hot**: the latest `hotTurns` turns of each session (older ones drop out, or move to the cold
 *   tier with `archiveTurns`);
 * - **warm**: facts (a fact with a `key` replaces the previous one) and episodes, newest first;
 * - **cold**: similarity search over episodes (and archived turns) through `embed(texts)`.
 *
 * The context's scope and identity pick the namespace; a missing identity throws (see
 * {@link memoryNamespace}). Through an orchestrator, each call is a `memory.recall` /
 * `memory.store` span.
 *
 * @example
 * const memory = new TieredMemory({ hotTurns: 10, embed: myEmbedder });
 * await memory.store({ kind: "episode", content: "Booked a flight to Berlin" }, ctx);
 * const recall = await memory.recall("Berlin trip", ctx);
 */
export class TieredMemory implements Memory {
  readonly #store: MemoryStore;
  readonly #options: z.output<typeof TieredMemoryOptionsSchema>;

  constructor(options: TieredMemoryOptions = {}) {
    this.#options = parseOrThrow(
      TieredMemoryOptionsSchema,
      options,
      ErrorCode.INVALID_OPTIONS,
      "options",
      "See TieredMemoryOptions: store (a MemoryStore), embed(texts) function, hotTurns >= 1, warmLimit/coldLimit >= 0.",
    );
    this.#store = this.#options.store ?? new InMemoryMemoryStore();
  }

  async store(event: MemoryEventInit, ctx: ExecContext): Promise<MemoryItem> {
    checkContext(ctx);
    const e = quickEvent(event) ?? parseEvent(event);
    const ns = memoryNamespace(ctx, e.scope);
    ctx.throwIfEnded();
    const o = this.#options;
    const cold =
      o.embed !== undefined &&
      (e.kind === MemoryKind.EPISODE || (e.kind === MemoryKind.TURN && o.archiveTurns));
    // Embedding happens before the write: if it fails, nothing of this event is stored.
    const vector = cold
      ? (await embedChecked(o.embed as EmbedFn, [e.content], "TieredMemory", ctx.signal))[0]
      : undefined;
    const item: MemoryItem = Object.freeze({
      id: randomUUID(),
      kind: e.kind,
      role: e.kind === MemoryKind.TURN ? (e.role ?? "user") : null,
      key: e.key ?? null,
      content: e.content,
      metadata: isEmpty(e.metadata)
        ? EMPTY_METADATA
        : Object.freeze(structuredClone(e.metadata) as Record<string, JsonValue>),
      createdAt: Date.now(),
    });
    await this.#store.write({
      namespace: ns.namespace,
      session: ns.session,
      item,
      ...(e.kind === MemoryKind.TURN ? { hot: { limit: o.hotTurns } } : { warm: true }),
      ...(vector === undefined ? {} : { vector }),
    });
    return item;
  }

  async recall(query: string | MemoryQuery, ctx: ExecContext): Promise<MemoryRecall> {
    checkContext(ctx);
    const q = parseOrThrow(
      QuerySchema,
      typeof query === "string" ? { text: query } : query,
      ErrorCode.INVALID_INPUT,
      "query",
      'Pass a string or { text?, tiers?: ("hot" | "warm" | "cold")[], hotLimit?, warmLimit?, coldLimit? }.',
    );
    const ns = memoryNamespace(ctx, q.scope);
    ctx.throwIfEnded();
    const o = this.#options;
    const tiers = new Set(q.tiers ?? ["hot", "warm", "cold"]);
    const coldLimit = tiers.has("cold") ? (q.coldLimit ?? o.coldLimit) : 0;
    const text = q.text?.trim() ?? "";
    const searchCold = coldLimit > 0 && text !== "" && o.embed !== undefined;
    const vector = searchCold
      ? (await embedChecked(o.embed as EmbedFn, [text], "TieredMemory", ctx.signal))[0]
      : undefined;
    const found = await this.#store.read({
      namespace: ns.namespace,
      session: ns.session,
      hotLimit: tiers.has("hot") ? (q.hotLimit ?? o.hotTurns) : 0,
      warmLimit: tiers.has("warm") ? (q.warmLimit ?? o.warmLimit) : 0,
      ...(vector === undefined ? {} : { cold: { vector, limit: coldLimit } }),
    });
    const cold = found.cold.filter((hit) => hit.score >= o.minScore);
    return Object.freeze({
      scope: ns.scope,
      hot: Object.freeze(found.hot),
      warm: Object.freeze(found.warm),
      cold: Object.freeze(cold),
    });
  }

  close(): Promise<void> {
    return this.#store.close();
  }
}
