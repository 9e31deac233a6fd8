import type { RunAnswerers } from "../../context/run-slot.js";
import type { z } from "zod";
import type { ExecContext } from "../../context/exec-context.js";
import type { AgentKit } from "../../orchestrator/types.js";
import type { AgentRuntime } from "../../runtime/types.js";
import type { JsonValue } from "../../types/agent.js";

/**
 * The end of a graph: an edge to `END` finishes the run.
 *
 * @example
 * const edges = [["refund", END]] as const;
 */
export const END = "__end__";
export type End = typeof END;

/** A graph's state: a plain JSON object whose keys the state schema lists. */
export type GraphState = Record<string, unknown>;

/**
 * What the state schema of a graph must be: a zod object schema (each key a channel nodes read
 * and write).
 */
export type StateSchema = z.ZodObject<z.ZodRawShape>;

/** A node's answer: the keys it changes (merged by key, or by the key's reducer). */
export type StateUpdate<S extends GraphState> = Partial<S>;

/**
 * Combines a key's current value with a node's update of it, e.g. appending to a list. Must be
 * pure: it runs again when a run replays after a crash.
 *
 * @example
 * const append: Reducer<string[]> = (current, update) => [...(current ?? []), ...update];
 */
export type Reducer<T = unknown> = (current: T | undefined, update: T) => T;

/**
 * What a node is given besides the state: its identity in the run, the abort signal, the
 * primitives of the graph runtime, and the ways a node talks to the client.
 *
 * @example
 * const lookup = fnNode(async (state, ctx) => {
 *   await ctx.emit(`looking up ${String(state.orderId)}\n`);
 *   return { total: await loadTotal(String(state.orderId), ctx.signal) };
 * });
 */
export interface NodeContext {
  readonly graph: string;
  readonly nodeId: string;
  /** 1 on the node's first visit in this run, 2 on the second… */
  readonly visit: number;
  /** The run (= durable run) id. */
  readonly runId: string;
  /** Aborts when the run is cancelled, times out or its worker loses the run. */
  readonly signal: AbortSignal;
  /** The node's ExecContext: identity, permissions, deadline, the `graph.node` span. */
  readonly exec: ExecContext;
  /** The runtime agent nodes invoke handlers through. */
  readonly runtime: AgentRuntime;
  /** Tools (policy-checked, TOOL_CALL_STARTED/COMPLETED events), memory and delegation. */
  readonly kit: AgentKit;
  /** The keys of the graph's state schema. */
  readonly stateKeys: ReadonlySet<string>;
  /** Answers already given to questions of this visit (what a re-run node applies first). */
  readonly answers: readonly JsonValue[];
  /** Shared state across runs, as the runtime's isolation level allows (see docs/runner.md). */
  readonly shared: SharedStateView;
  /** Streams text to the client: a CLIENT_OUTPUT_DELTA event. */
  emit(chunk: string): Promise<void>;
  /**
   * Pauses the run for a person (CLIENT_INPUT_REQUESTED, then `paused`) and returns the
   * answer `host.resume` gives; after the answer the node runs again from its start.
   */
  input<T = JsonValue>(request: InputRequest): Promise<T>;
  /**
   * A memoized step scoped to this node's visit: `fn` runs once and its JSON result is committed,
   * however often the node itself is re-run (after a pause or a crash).
   */
  step<T>(key: string, fn: () => T | Promise<T>): Promise<T>;
}

/** What a node asks a person for (see {@link NodeContext.input}). */
export interface InputRequest {
  readonly prompt: string;
  /** e.g. `approval`, `text`, `choice`. */
  readonly kind?: string;
  readonly data?: Record<string, JsonValue>;
  /** Validates the answer at `resume` (INVALID_INPUT) and when the node reads it. */
  readonly schema?: z.ZodType;
  /** Who may answer (`resume(id, answer, { ctx })` from one of them); absent: anyone. */
  readonly answeredBy?: RunAnswerers;
}

/**
 * Read and write access to the state shared across runs (`ctx.shared`). Every call is async: the
 * state may live in another process (Redis, for every replica of an app). Values are JSON,
 * handed in and out as copies.
 *
 * @example
 * const seen = (await ctx.shared.get<number>("seen")) ?? 0;
 * await ctx.shared.set("last", ctx.runId);
 * await ctx.shared.update<number>("handled", (n) => (n ?? 0) + 1);
 */
export interface SharedStateView {
  get<T = JsonValue>(key: string): Promise<T | undefined>;
  /**
   * Replaces `key` by `value`. Under `synchronized` isolation it takes the key's lock: it waits
   * for an update of the key in progress (on any replica), so neither overwrites the other.
   */
  set(key: string, value: JsonValue): Promise<void>;
  /**
   * Replaces `key` by `fn(current)`. Under `synchronized` isolation, updates and sets of one key
   * run one at a time (even when `fn` is async, and across replicas on one store); under
   * `shared` they may interleave.
   */
  update<T extends JsonValue>(
    key: string,
    fn: (current: T | undefined) => T | Promise<T>,
  ): Promise<T>;
}

/** The kinds of node Nerva ships (`model` nodes are built by `modelNode` in `@nerva/ai-sdk`). */
export const NodeKind = {
  AGENT: "agent",
  FUNCTION: "function",
  INPUT: "input",
  MODEL: "model",
} as const;
export type NodeKind = (typeof NodeKind)[keyof typeof NodeKind];

/**
 * A node of a graph. `agentNode`, `fnNode` and `inputNode` build one; other packages add kinds by
 * building this shape (this is the extension point a model node uses): `run` gets the state (only
 * the `reads` keys when given) and returns the keys it changes (only `writes` keys when given).
 *
 * @example
 * const double: GraphNode<{ n: number }> = { kind: "function", writes: ["n"], run: (s) => ({ n: s.n * 2 }) };
 */
export interface GraphNode<S extends GraphState = GraphState> {
  readonly kind: string;
  /** State keys the node reads; it is given only these. All keys when omitted. */
  readonly reads?: readonly string[];
  /** State keys the node may write; any other key in its answer fails the node. */
  readonly writes?: readonly string[];
  /** In a fan-out: a failure of this node does not fail the join (its update is dropped). */
  readonly optional?: boolean;
  /** Visits of this node in one run after which the run fails. */
  readonly maxVisits?: number;
  /** Seconds one visit may take (the node's `ctx.signal` aborts, the node fails). */
  readonly timeoutSeconds?: number;
  /**
   * For `injectInput` at this node: validates the answer before the run resumes
   * (input nodes set it from their `schema`).
   */
  readonly inputSchema?: z.ZodType;
  run(state: S, ctx: NodeContext): Promise<StateUpdate<S> | void> | StateUpdate<S> | void;
}

/** A function of the state choosing the next node (or `END`). Must be pure. */
export type EdgeRouter<S extends GraphState = GraphState> = {
  // Method syntax: a router of a narrower state still fits where a graph of any state is taken.
  route(state: S): string;
}["route"];

/**
 * An edge: `[from, to]` (static), `[from, [a, b]]` (fan-out: `a` and `b` run in parallel and
 * join at the one node both have an edge to), or `[from, (state) => next, targets?]`
 * (conditional; list its possible `targets` so validation can check reachability).
 */
export type EdgeSpec<S extends GraphState = GraphState> =
  | readonly [string, string]
  | readonly [string, readonly string[]]
  | readonly [string, EdgeRouter<S>]
  | readonly [string, EdgeRouter<S>, readonly string[]];

/** What {@link defineGraph} takes. */
export interface GraphDefinition<Schema extends StateSchema> {
  /** The graph's name: also the handler name its runs run under. */
  readonly name: string;
  readonly state: Schema;
  readonly nodes: Readonly<Record<string, GraphNode<z.output<Schema>>>>;
  readonly edges: readonly EdgeSpec<z.output<Schema>>[];
  /** Where runs start unless an entry point names another node. */
  readonly entry: string;
  /** Other nodes entry points may start at (they count as reachable). */
  readonly entries?: readonly string[];
  /** Per-key reducers, e.g. `{ history: Reducers.append }`. */
  readonly reducers?: Readonly<
    Partial<Record<keyof z.output<Schema> & string, (current: never, update: never) => unknown>>
  >;
  /** Node runs after which a run fails (default 100). */
  readonly maxSteps?: number;
  /** What a run returns as `output` from its final state (default: `null`). */
  readonly output?: (state: z.output<Schema>) => JsonValue;
  readonly description?: string;
}

/** The outgoing edge of one node, after validation. */
export type Edge<S extends GraphState = GraphState> =
  | { readonly type: "static"; readonly to: string }
  | { readonly type: "fanout"; readonly to: readonly string[]; readonly join: string }
  | {
      readonly type: "conditional";
      readonly route: EdgeRouter<S>;
      readonly targets: readonly string[] | null;
    };

/**
 * A validated graph (see {@link defineGraph}).
 *
 * @example
 * const graph = defineGraph({ name: "hello", state, nodes, edges, entry: "greet" });
 * graph.nodeIds; // ["greet"]
 */
export interface Graph<S extends GraphState = GraphState> {
  readonly name: string;
  readonly state: StateSchema;
  readonly nodes: ReadonlyMap<string, GraphNode<S>>;
  readonly nodeIds: readonly string[];
  readonly edges: ReadonlyMap<string, Edge<S>>;
  readonly entry: string;
  readonly reducers: ReadonlyMap<string, Reducer<unknown>>;
  readonly maxSteps: number;
  readonly output: { output(state: S): JsonValue }["output"] | null;
  readonly description: string;
}
