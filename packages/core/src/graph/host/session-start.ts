import { createHash } from "node:crypto";
import { ErrorCode, NervaError, parseOrThrow } from "../../errors.js";
import type { JsonValue } from "../../types/agent.js";
import type { GraphExecutor, GraphStart } from "../execute/executor.js";
import { verifySession } from "./session-state.js";
import type { Graph } from "../define/types.js";

const FIX_STATE = "Pass the start state as a plain JSON object of the graph's state keys.";

/** Where a new run starts, and what it replaces. */
export interface StartPlan {
  readonly payload: GraphStart;
  /** One run per resumed sessionState and input. */
  readonly idempotencyKey?: string;
  /** The paused run a sessionState came from. */
  readonly supersedes: string | null;
}

/**
 * Throws INVALID_INPUT unless `value` is a plain object (a `Buffer`, a `Map` or a class instance
 * would be read as an empty state, and its data lost). `label` names it ("input", "body").
 */
export function checkStartState(value: unknown, label: string): void {
  const proto: unknown =
    typeof value === "object" && value !== null ? Object.getPrototypeOf(value) : undefined;
  if (proto === Object.prototype || proto === null) return;
  const what =
    value === null || typeof value !== "object"
      ? typeof value === "object"
        ? "null"
        : typeof value
      : Buffer.isBuffer(value)
        ? "a Buffer (parse it first, e.g. JSON.parse(body.toString()))"
        : Array.isArray(value)
          ? "an array"
          : `a ${(value as object).constructor?.name ?? "non-plain object"}`;
  throw new NervaError(ErrorCode.INVALID_INPUT, `Invalid ${label}: got ${what}. ${FIX_STATE}`, {
    issues: [{ path: label, message: "must be a plain JSON object" }],
  });
}

/**
 * The start of a run: a fresh state at `entryNode`, or a verified sessionState resumed at
 * its paused node with `input` merged into its state (the paused input node's key, when `input`
 * has it, is that node's answer).
 */
export async function planStart(
  graph: Graph,
  executor: GraphExecutor,
  entryNode: string,
  input: unknown,
  sessionState: unknown,
  key: () => Promise<Buffer>,
): Promise<StartPlan> {
  checkStartState(input, "input");
  if (sessionState === undefined) {
    return {
      payload: { state: executor.parseState(input, "input"), node: entryNode },
      supersedes: null,
    };
  }
  const s = verifySession(await key(), sessionState, graph.name);
  const node = graph.nodes.get(s.node);
  if (node === undefined) {
    throw new NervaError(
      ErrorCode.INVALID_INPUT,
      `Invalid sessionState: node "${s.node}" is not in graph "${graph.name}" any more.`,
      { issues: [{ path: "sessionState.node", message: "unknown node" }] },
    );
  }
  const writes = node.kind === "input" ? node.writes?.[0] : undefined;
  const given = input as Record<string, unknown>;
  let answer = writes !== undefined && writes in given ? (given[writes] as JsonValue) : undefined;
  if (answer !== undefined && node.inputSchema !== undefined) {
    // Refused here, before the paused run is ended for this resume.
    answer = parseOrThrow(
      node.inputSchema,
      answer,
      ErrorCode.INVALID_INPUT,
      "answer",
      `Send the answer node "${s.node}" asks for.`,
    ) as JsonValue;
  }
  const rest = { ...given };
  if (writes !== undefined) delete rest[writes];
  const state = executor.parseState({ ...s.state, ...rest }, "input");
  const digest = createHash("sha256")
    .update(JSON.stringify([(sessionState as { sig: string }).sig, input]))
    .digest("base64url");
  return {
    payload: {
      state,
      node: s.node,
      visits: s.visits,
      path: s.path,
      steps: s.steps,
      usage: s.usage,
      ...(answer === undefined ? {} : { answer }),
    },
    idempotencyKey: `$session:${digest}`,
    supersedes: s.runId,
  };
}

export { FIX_STATE };
