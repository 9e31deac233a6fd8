import type { ExecContext } from "../../context/exec-context.js";
import { ErrorCode, NervaError } from "../../errors.js";
import type { RunContext } from "../../runs/run-context.js";
import type { JsonValue } from "../../types/agent.js";
import { tokenUsageToWire, type TokenUsageWire } from "../../types/usage.js";
import { joinTarget, routeAfter } from "./edge-routing.js";
import { GraphErrorCode, GraphFailure, isUnwind, nodeFailure } from "./failure.js";
import type { GraphDeps, GraphSnapshot } from "./node-context.js";
import {
  guardedStep,
  isThenable,
  reportNodeFailure,
  stepFailure,
  visitNode,
  visitStep,
} from "./node-visit.js";
import { nodeStepKey } from "./run-events.js";
import { isolatedShared } from "./shared-state.js";
import { checkUpdate, mergeUpdate, mergeUpdates } from "./state-merge.js";
import {
  END,
  type Graph,
  type GraphNode,
  type GraphState,
  type SharedStateView,
} from "../define/types.js";

/** Where a run starts: a fresh start, or where a sessionState left off. */
export interface GraphStart {
  readonly state: Record<string, unknown>;
  /** The node to start at (default: the graph's entry). */
  readonly node?: string;
  readonly visits?: Record<string, number>;
  readonly path?: readonly string[];
  readonly steps?: number;
  /** An answer for the first question of the start node (a resumed pause). */
  readonly answer?: JsonValue;
  readonly usage?: TokenUsageWire;
}

/** What one committed node visit holds: the state after it and where to go next. */
interface NodeCommit {
  readonly state: Record<string, unknown>;
  readonly next: readonly string[];
  /** Token usage of the run up to this node (when any was recorded). */
  readonly usage?: TokenUsageWire;
}

const NO_USAGE: TokenUsageWire = {
  prompt_tokens: 0,
  completion_tokens: 0,
  total_tokens: 0,
  cost_usd: 0,
};

function addUsage(a: TokenUsageWire, b: TokenUsageWire, minus?: TokenUsageWire): TokenUsageWire {
  const m = minus ?? NO_USAGE;
  return {
    prompt_tokens: a.prompt_tokens + b.prompt_tokens - m.prompt_tokens,
    completion_tokens: a.completion_tokens + b.completion_tokens - m.completion_tokens,
    total_tokens: a.total_tokens + b.total_tokens - m.total_tokens,
    cost_usd: a.cost_usd + b.cost_usd - m.cost_usd,
  };
}

/** What one committed fan-out branch holds: its update (or why an optional branch failed). */
interface BranchCommit {
  readonly update: Record<string, unknown> | null;
  readonly failed?: string;
}

/**
 * Runs a graph inside a durable run (`ctx.run`): every node visit is a step keyed `$node/node#visit`,
 * committed with the state after it, so a run taken over after a crash replays the committed
 * visits without running them and continues at the first unfinished node. Spans: one
 * `graph.node` per visit under the caller's span.
 *
 * @example
 * runtime.register("my_graph", async (input, ctx) => {
 *   const done = await new GraphExecutor(graph, { runtime: agents }).execute({ state: {} }, ctx);
 *   return JSON.stringify(done.state);
 * });
 */
export class GraphExecutor<S extends GraphState = GraphState> {
  readonly graph: Graph<S>;
  readonly #keys: ReadonlySet<string>;
  readonly #deps: GraphDeps;

  constructor(graph: Graph<S>, deps: GraphDeps) {
    this.graph = graph;
    this.#keys = new Set(Object.keys(graph.state.shape));
    this.#deps = deps;
  }

  /** Checks `state` against the state schema; INVALID_INPUT naming the key otherwise. */
  parseState(state: unknown, label = "state"): Record<string, unknown> {
    const parsed = this.graph.state.safeParse(state ?? {});
    if (parsed.success) return parsed.data as Record<string, unknown>;
    const issues = parsed.error.issues.map((i) => ({
      path: [label, ...i.path.map(String)].join("."),
      message: i.message,
    }));
    throw new NervaError(
      ErrorCode.INVALID_INPUT,
      `Invalid ${label} for graph "${this.graph.name}": ${issues.map((i) => `${i.path}: ${i.message}`).join("; ")}. Send the keys of its state schema (${[...this.#keys].join(", ")}).`,
      { issues },
    );
  }

  /**
   * Executes the graph from `start` in the run of `ctx` and resolves with the final snapshot.
   * Throws `RunPaused` when a node waits for input (let it propagate), `GraphFailure` when the
   * run fails.
   */
  async execute(
    start: GraphStart,
    ctx: ExecContext,
    shared: SharedStateView = isolatedShared(),
  ): Promise<GraphSnapshot> {
    const run = ctx.run;
    if (run === null) {
      throw new NervaError(
        ErrorCode.INVALID_STATE,
        `Graph "${this.graph.name}" must execute inside a durable run (ctx.run is null): run it through GraphHost, or register it as a handler of a Runner.`,
      );
    }
    let state = this.parseState(start.state);
    const visits: Record<string, number> = { ...start.visits };
    const path = [...(start.path ?? [])];
    let steps = start.steps ?? 0;
    let done = steps;
    let preset = start.answer === undefined ? null : { value: start.answer };
    let current: readonly string[] = [start.node ?? this.graph.entry];
    let running: { node: string; visit: number } | null = null;
    let usage = start.usage ?? NO_USAGE;
    let mark = ctx.tokenUsage;
    /** Usage so far: the committed total plus what this attempt recorded since. */
    const usageNow = (): TokenUsageWire => {
      const now = ctx.tokenUsage;
      if (now.totalTokens === mark.totalTokens && now.costUsd === mark.costUsd) return usage;
      return addUsage(usage, tokenUsageToWire(now), tokenUsageToWire(mark));
    };
    const snapshot = (): GraphSnapshot => ({
      usage: usageNow(),
      state,
      node: running?.node ?? null,
      visit: running?.visit ?? null,
      visits: { ...visits },
      path: [...path],
      // Committed visits only: a node admitted but not finished runs again on a resume.
      steps: done,
    });
    const admit = (id: string): number => {
      const node = this.graph.nodes.get(id) as GraphNode<S>;
      if (steps + 1 > this.graph.maxSteps) {
        throw new GraphFailure(
          GraphErrorCode.MAX_STEPS,
          `Graph "${this.graph.name}" stopped after maxSteps (${this.graph.maxSteps}) node runs, before "${id}": a loop that does not end? Raise maxSteps or fix the edge that loops.`,
          false,
          id,
        );
      }
      const visit = (visits[id] ?? 0) + 1;
      if (node.maxVisits !== undefined && visit > node.maxVisits) {
        throw new GraphFailure(
          GraphErrorCode.MAX_VISITS,
          `Node "${id}" of graph "${this.graph.name}" would run a ${visit}th time, over its maxVisits (${node.maxVisits}).`,
          false,
          id,
        );
      }
      steps += 1;
      return visit;
    };
    try {
      while (!(current.length === 1 && current[0] === END)) {
        if (current.length === 1) {
          const id = current[0] as string;
          const visit = admit(id);
          running = { node: id, visit };
          const given = preset;
          preset = null;
          const before = state;
          const commitOf = (update: unknown): NodeCommit => {
            const after = mergeUpdate(this.graph, this.#keys, before, id, update);
            const next = routeAfter(this.graph, id, after);
            const total = usageNow();
            return total.total_tokens > 0 || total.cost_usd > 0
              ? { state: after, next, usage: total }
              : { state: after, next };
          };
          let commit: NodeCommit;
          try {
            // A node that answers synchronously is merged and committed without a promise of
            // its own (most of a small node's cost is such bookkeeping).
            commit = await visitStep<NodeCommit>(run, id, visit, () => {
              const update = visitNode({
                // Every field written out: spreading a shared object into this literal made
                // V8 add each later field through a slow path, +15 µs per visit (bench/graph).
                graph: this.graph,
                deps: this.#deps,
                keys: this.#keys,
                id,
                visit,
                state: before,
                ctx,
                run,
                shared,
                snapshot,
                preset: given,
              });
              // visitNode answers a real promise for a node that answered a thenable.
              return isThenable(update)
                ? (update as Promise<unknown>).then(commitOf)
                : commitOf(update);
            });
          } catch (err) {
            throw await stepFailure(run, id, visit, err);
          }
          usage = commit.usage ?? usage;
          mark = ctx.tokenUsage;
          visits[id] = visit;
          done += 1;
          path.push(nodeStepKey(id, visit));
          state = commit.state;
          current = commit.next;
          running = null;
          continue;
        }
        current = await this.#fanOut(
          current,
          () => state,
          (s) => (state = s),
          admit,
          {
            commit: () => void (done += 1),
            ctx,
            run,
            shared,
            snapshot,
            visits,
            path,
          },
        );
      }
    } catch (err) {
      if (err instanceof GraphFailure && err.snapshot === null) err.snapshot = snapshot();
      throw err;
    }
    return snapshot();
  }

  /** Runs the branches of a fan-out in parallel, each its own committed step; returns the join. */
  async #fanOut(
    branches: readonly string[],
    getState: () => Record<string, unknown>,
    setState: (s: Record<string, unknown>) => void,
    admit: (id: string) => number,
    c: {
      commit: () => void;
      ctx: ExecContext;
      run: RunContext;
      shared: SharedStateView;
      snapshot: () => GraphSnapshot;
      visits: Record<string, number>;
      path: string[];
    },
  ): Promise<readonly string[]> {
    const before = getState();
    const planned = branches.map((id) => ({ id, visit: admit(id) }));
    const settled = await Promise.allSettled(
      planned.map(({ id, visit }) =>
        guardedStep(c.run, id, visit, () =>
          visitStep<BranchCommit>(c.run, id, visit, async () => {
            const node = this.graph.nodes.get(id) as GraphNode<S>;
            try {
              const update: unknown = await visitNode({
                graph: this.graph,
                deps: this.#deps,
                keys: this.#keys,
                id,
                visit,
                state: before,
                ctx: c.ctx,
                run: c.run,
                shared: c.shared,
                snapshot: c.snapshot,
                preset: null,
              });
              return { update: checkUpdate(this.graph, this.#keys, id, update) };
            } catch (err) {
              if (node.optional !== true || isUnwind(err) || c.ctx.signal.aborted) throw err;
              const failure = nodeFailure(err, id);
              await reportNodeFailure(c.run, id, visit, failure);
              return { update: null, failed: failure.message };
            }
          }),
        ),
      ),
    );
    const unwind = settled.find((s) => s.status === "rejected" && isUnwind(s.reason));
    if (unwind !== undefined) throw (unwind as PromiseRejectedResult).reason;
    const failed = settled.find((s) => s.status === "rejected");
    if (failed !== undefined) throw (failed as PromiseRejectedResult).reason;
    const updates: [string, Record<string, unknown>][] = [];
    settled.forEach((s, i) => {
      const { id, visit } = planned[i] as { id: string; visit: number };
      c.visits[id] = visit;
      c.commit();
      c.path.push(nodeStepKey(id, visit));
      const value = (s as PromiseFulfilledResult<BranchCommit>).value;
      if (value.update !== null) updates.push([id, value.update]);
    });
    const after = mergeUpdates(this.graph, this.#keys, before, updates);
    setState(after);
    return joinTarget(this.graph, branches);
  }
}
