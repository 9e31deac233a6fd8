import type { ExecContext } from "../../context/exec-context.js";
import type { Span } from "../../context/span.js";
import { ErrorCode, NervaError } from "../../errors.js";
import { ActiveRun, recordEvent, type RunContext } from "../../runs/run-context.js";
import { RunEventType } from "../../runs/types.js";
import type { JsonValue } from "../../types/agent.js";
import { GraphFailure, isUnwind, nodeFailure } from "./failure.js";
import { createNodeContext, type GraphDeps, type GraphSnapshot } from "./node-context.js";
import { nodeRunKey } from "./run-events.js";
import type { Graph, GraphNode, GraphState, SharedStateView } from "../define/types.js";

/** One visit of one node: what it runs with. */
export interface NodeVisit<S extends GraphState> {
  readonly graph: Graph<S>;
  readonly deps: GraphDeps;
  readonly keys: ReadonlySet<string>;
  readonly id: string;
  readonly visit: number;
  readonly state: Record<string, unknown>;
  readonly ctx: ExecContext;
  readonly run: RunContext;
  readonly shared: SharedStateView;
  readonly snapshot: () => GraphSnapshot;
  readonly preset: { value: JsonValue } | null;
}

const NOT_ENDED: unique symbol = Symbol("not ended");

/**
 * Runs one visit of node `id` (the node's span, deadline and context) and returns its update: at
 * once when the node answers synchronously (most small nodes), else a promise raced against the
 * node's end (cancel, timeout), so a node that ignores its signal still stops the execution at
 * once. A synchronous answer needs no race, nor the promise and closures of one.
 */
export function visitNode<S extends GraphState>(v: NodeVisit<S>): unknown {
  const { id, visit, ctx } = v;
  const node = v.graph.nodes.get(id) as GraphNode<S>;
  const span = ctx.startSpan("graph.node", { id, visit, kind: node.kind });
  let ended: unknown = NOT_ENDED;
  let fail: ((reason: unknown) => void) | null = null;
  const onEnd = (reason: unknown): void => {
    if (fail !== null) fail(reason);
    else ended = reason;
  };
  const exec =
    node.timeoutSeconds === undefined
      ? ctx.fork({ span, onEnd })
      : ctx.fork({ span, timeoutSeconds: node.timeoutSeconds, onEnd });
  let answer: unknown;
  let thenable: boolean;
  try {
    const nodeCtx = createNodeContext({
      graph: v.graph.name,
      nodeId: id,
      visit,
      run: v.run,
      exec,
      deps: v.deps,
      stateKeys: v.keys,
      shared: v.shared,
      snapshot: v.snapshot,
      preset: v.preset,
    });
    const view = node.reads === undefined ? v.state : pick(v.state, node.reads);
    answer = node.run(view as S, nodeCtx);
    thenable = isThenable(answer);
  } catch (err) {
    endVisit(span, exec, err);
    throw err;
  }
  if (!thenable) {
    endVisit(span, exec, NOT_ENDED);
    return answer;
  }
  const stop = new Promise<never>((_, reject) => {
    if (ended !== NOT_ENDED) reject(ended);
    else fail = reject;
  });
  return Promise.race([answer as PromiseLike<unknown>, stop]).then(
    (update) => {
      endVisit(span, exec, NOT_ENDED);
      return update;
    },
    (err: unknown) => {
      endVisit(span, exec, err);
      throw err;
    },
  );
}

/** Ends a visit's span (`error` when `err` is given) and disposes of its context. */
function endVisit(span: Span, exec: ExecContext, err: unknown): void {
  try {
    if (err === NOT_ENDED) span.end("ok");
    else span.end("error", err instanceof Error ? err.message : String(err));
  } finally {
    exec.dispose();
  }
}

/**
 * Runs visit `visit` of node `id` as its step, keyed `$node/id#visit`: a key users cannot give,
 * so their own steps never take a visit's place (or a visit theirs).
 */
export function visitStep<T>(
  run: RunContext,
  id: string,
  visit: number,
  fn: () => T | Promise<T>,
): Promise<T> {
  if (!(run instanceof ActiveRun)) {
    throw new NervaError(
      ErrorCode.INVALID_STATE,
      `Node "${id}" must execute inside a Runner's durable run (ctx.run of a claimed run): run the graph through GraphHost, or register it as a handler of a Runner.`,
    );
  }
  return run.derivedStep(nodeRunKey(id, visit), fn);
}

/** Runs `fn` (a node's step); a failure is written as NODE_FAILED and thrown as GraphFailure. */
export async function guardedStep<T>(
  run: RunContext,
  id: string,
  visit: number,
  fn: () => Promise<T>,
): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    throw await stepFailure(run, id, visit, err);
  }
}

/**
 * What a node's step that threw `err` throws: an unwind (pause, lost lease) as it is, anything
 * else as a GraphFailure, written first as NODE_FAILED.
 */
export async function stepFailure(
  run: RunContext,
  id: string,
  visit: number,
  err: unknown,
): Promise<unknown> {
  if (isUnwind(err)) return err;
  const failure = nodeFailure(err, id);
  await reportNodeFailure(run, id, visit, failure);
  return failure;
}

export async function reportNodeFailure(
  run: RunContext,
  id: string,
  visit: number,
  f: GraphFailure,
): Promise<void> {
  await recordEvent(run, RunEventType.NODE_FAILED, {
    node: id,
    visit,
    code: f.code,
    error: f.message,
    retriable: f.retriable,
  }).catch(() => undefined);
}

export function isThenable(v: unknown): v is PromiseLike<unknown> {
  return typeof (v as { then?: unknown } | null)?.then === "function";
}

function pick(state: Record<string, unknown>, keys: readonly string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const k of keys) if (k in state) out[k] = state[k];
  return out;
}
