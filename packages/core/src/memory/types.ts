import type { ExecContext } from "../context/exec-context.js";
import type { EmbedFunction } from "../router/embedding-router.js";
import type { JsonValue } from "../types/agent.js";
import type { Scope } from "../types/status.js";

/**
 * The embedder memory's cold tier uses: the same {@link EmbedFunction} as `EmbeddingRouter`, so one
 * function serves routing and memory.
 *
 * @example
 * const memory = new TieredMemory({ embed: myEmbedFunction });
 */
export type EmbedFn = EmbedFunction;

/** The three kinds of things memory keeps. */
export const MemoryKind = {
  /** One conversation turn: hot tier (recent turns of a session, bounded). */
  TURN: "turn",
  /** A durable fact, optionally under a `key` that a later fact replaces: warm tier. */
  FACT: "fact",
  /** A summary of something that happened: warm tier, and cold tier when an embedder is set. */
  EPISODE: "episode",
} as const;
export type MemoryKind = (typeof MemoryKind)[keyof typeof MemoryKind];

/** Who spoke a turn. */
export type TurnRole = "user" | "assistant" | "system" | "tool";

/**
 * What `memory.store` accepts. Only `content` is required; `kind` defaults to `turn`.
 *
 * @example
 * await memory.store({ kind: "fact", key: "home_city", content: "Lives in Berlin" }, ctx);
 */
export interface MemoryEventInit {
  readonly kind?: MemoryKind;
  readonly content: string;
  /** Turns only; default `user`. */
  readonly role?: TurnRole;
  /** Facts only: a later fact with the same key replaces this one. */
  readonly key?: string;
  readonly metadata?: Readonly<Record<string, JsonValue>>;
  /** Overrides `ctx.memoryScope` for this write; the identity still comes from the context. */
  readonly scope?: Scope;
}

/** One remembered item, as stored and recalled. */
export interface MemoryItem {
  readonly id: string;
  readonly kind: MemoryKind;
  readonly role: TurnRole | null;
  readonly key: string | null;
  readonly content: string;
  readonly metadata: Readonly<Record<string, JsonValue>>;
  /** Epoch milliseconds. */
  readonly createdAt: number;
}

/** A cold-tier hit: the item and its cosine similarity to the query, in [-1, 1]. */
export interface ScoredMemoryItem {
  readonly item: MemoryItem;
  readonly score: number;
}

/**
 * What `memory.recall` accepts: a plain string (the query text) or this object.
 *
 * @example
 * await memory.recall({ text: "trips to Berlin", tiers: ["cold"], coldLimit: 3 }, ctx);
 */
export interface MemoryQuery {
  /** Text for the cold (similarity) tier; without it the cold tier is not searched. */
  readonly text?: string;
  /** Tiers to read; default all three. */
  readonly tiers?: readonly ("hot" | "warm" | "cold")[];
  readonly hotLimit?: number;
  readonly warmLimit?: number;
  readonly coldLimit?: number;
  /** Overrides `ctx.memoryScope` for this read; the identity still comes from the context. */
  readonly scope?: Scope;
}

/** What `memory.recall` returns. */
export interface MemoryRecall {
  /** The scope that was read. */
  readonly scope: Scope;
  /** Recent turns of this session, oldest first. */
  readonly hot: readonly MemoryItem[];
  /** Facts and episodes, newest first. */
  readonly warm: readonly MemoryItem[];
  /** Similar items, best first. */
  readonly cold: readonly ScoredMemoryItem[];
}

/**
 * The memory primitive. Every call takes the context: its `memoryScope` and identity decide
 * whose memory is read or written (`user` → userId, `session` → userId + sessionId, `agent` →
 * agent name + userId, `global` → shared). A scope whose identity is missing throws; nothing
 * falls back to a shared bucket. The orchestrator opens the `memory.recall` / `memory.store`
 * spans of the calls it makes (its kit's and the turns it stores).
 *
 * @example
 * await memory.store({ content: "I want to fly to Berlin", role: "user" }, ctx);
 * const { hot, warm, cold } = await memory.recall("Berlin", ctx);
 */
export interface Memory {
  recall(query: string | MemoryQuery, ctx: ExecContext): Promise<MemoryRecall>;
  store(event: MemoryEventInit, ctx: ExecContext): Promise<MemoryItem>;
  /** Releases the backing store (database handles). */
  close(): Promise<void>;
}

/** One atomic write handed to a {@link MemoryStore}. */
export interface MemoryWrite {
  /** Encoded scope identity, e.g. `user:u1`; produced by `memoryNamespace`. */
  readonly namespace: string;
  /** Session partition of the hot tier (`""` when the context has no session). */
  readonly session: string;
  readonly item: MemoryItem;
  /** Put the item in the hot tier and keep only the newest `limit` turns of this session. */
  readonly hot?: { readonly limit: number };
  /** Put the item in the warm tier (a fact with a key replaces the previous one). */
  readonly warm?: boolean;
  /** Put the item in the cold tier with this vector. */
  readonly vector?: readonly number[];
}

/** One read handed to a {@link MemoryStore}; a limit of 0 skips a tier. */
export interface MemoryRead {
  readonly namespace: string;
  readonly session: string;
  readonly hotLimit: number;
  readonly warmLimit: number;
  readonly cold?: { readonly vector: readonly number[]; readonly limit: number };
}

/** What a {@link MemoryStore} returns for a {@link MemoryRead}. */
export interface MemoryReadResult {
  readonly hot: MemoryItem[];
  readonly warm: MemoryItem[];
  readonly cold: ScoredMemoryItem[];
}

/**
 * The storage behind {@link TieredMemory}. It knows nothing of contexts: it is given encoded
 * namespaces and must never return an item of one namespace for another. Each `write` is atomic:
 * all of its tiers are written, or none.
 *
 * @example
 * const memory = new TieredMemory({ store: new InMemoryMemoryStore() });
 */
export interface MemoryStore {
  write(write: MemoryWrite): Promise<void>;
  read(read: MemoryRead): Promise<MemoryReadResult>;
  close(): Promise<void>;
}
