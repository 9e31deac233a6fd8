import { createHash } from "node:crypto";
import { ErrorCode, NervaError } from "../errors.js";
import type { JsonValue } from "../types/agent.js";
import type { GraphExecutor, GraphStart } from "./executor.js";
import { verifySession } from "./session-state.js";
import type { Graph } from "./types.js";

const FIX_STATE = "Pass the start state as a plain JSON object of the graph's state keys.";

/** Where a new execution starts, and what it replaces. */
export interface StartPlan {
  readonly payload: GraphStart;
  /** One execution per resumed sessionState and input. */
  readonly idempotencyKey?: string;
  /** The paused execution a sessionState came from. */
  readonly supersedes: string | null;
}

/**
 * The start of an execution: a fresh state at `entryNode`, or a verified sessionState resumed at
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
  if (typeof input !== "object" || input === null || Array.isArray(input)) {
    throw new NervaError(ErrorCode.INVALID_INPUT, `Invalid input: ${FIX_STATE}`, {
      issues: [{ path: "input", message: "must be an object" }],
    });
  }
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
  const answer = writes !== undefined && writes in given ? (given[writes] as JsonValue) : undefined;
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
    idempotencyKey: `session:${digest}`,
    supersedes: s.executionId,
  };
}

export { FIX_STATE };
