import type { ExecContext } from "../context/exec-context.js";
import { newRequestId } from "../context/ids.js";
import { kRunRecorder, type RunEventRecorder } from "../context/run-slot.js";
import { jsonLimitViolation } from "../internal/json-limits.js";
import { ErrorCode, NervaError } from "../errors.js";
import type { Memory } from "../memory/types.js";
import { askPolicy } from "../policy/check.js";
import { Checkpoint, type PolicyAction, type PolicyDecision } from "../policy/types.js";
import { thrownResult } from "../runtime/results.js";
import { ToolStatus, type ToolCallOptions, type ToolResult } from "../tools/types.js";
import {
  agentResult,
  type AgentInputInit,
  type AgentResult,
  type JsonValue,
} from "../types/agent.js";
import { AgentStatus } from "../types/status.js";
import type { Wiring } from "./options.js";
import { callToolStage, discoverStage, recallStage, storeStage } from "./stages.js";
import { answerToolApproval, selfApprovable } from "./tool-approval.js";
import type { AgentKit } from "./types.js";

/** Largest tool input or output, as JSON, written into a run's history with its call. */
const MAX_RECORDED_BYTES = 16 * 1024;

/** A tool's arguments as JSON for the history, or `undefined` when too big or not plain JSON. */
function toolInput(value: unknown): JsonValue | undefined {
  if (jsonLimitViolation(value) !== null) return undefined;
  try {
    const text = JSON.stringify(value);
    return text === undefined || text.length > MAX_RECORDED_BYTES
      ? undefined
      : (JSON.parse(text) as JsonValue);
  } catch {
    return undefined;
  }
}

/** A tool's output for the history: `{ output }` when it fits (see {@link toolInput}). */
function outputOf(value: unknown): { output?: JsonValue } {
  const output = toolInput(value);
  return output === undefined ? {} : { output };
}

/** The primitives a kit reaches. */
export type KitDeps = Pick<Wiring, "runtime" | "tools" | "memory" | "policy" | "stats">;

/** A refusal of the policy during execution, or `null` (always `null` without a policy). */
function refusalOf(
  deps: KitDeps,
  action: PolicyAction,
  ctx: ExecContext,
): Promise<PolicyDecision | null> | null {
  return deps.policy === null ? null : askPolicy(deps.policy, action, ctx);
}

function refusalText(d: PolicyDecision): string {
  return `${d.code ?? ErrorCode.POLICY_DENIED}: ${d.reason}`;
}

function noMemory(): NervaError {
  return new NervaError(
    ErrorCode.INVALID_OPTIONS,
    "This orchestrator has no memory: pass options.memory (e.g. new TieredMemory()) to use kit.memory.",
    { issues: [{ path: "options.memory", message: "required by kit.memory" }] },
  );
}

/**
 * Builds the {@link AgentKit} of one handler invocation, bound to `ctx`. Each call opens its
 * stage span (`tools.call`, `tools.discover`, `memory.recall`, `memory.store`); refusals of the
 * policy are recorded in the request's `kRefusals` slot by `askPolicy`.
 */
export function createKit(
  deps: KitDeps,
  ctx: ExecContext,
  recorder: RunEventRecorder | null = ctx.local(kRunRecorder) ?? null,
): AgentKit {
  const { runtime, tools, memory, stats } = deps;
  const call = async (
    name: string,
    args: unknown,
    options?: ToolCallOptions,
  ): Promise<ToolResult> => {
    if (recorder === null) return callTool(name, args, options);
    // Inside a durable run, each call is written to its history (what a chat UI shows as a
    // tool part); a failed write is the run's (its lease), never the caller's tool call.
    const action = { checkpoint: Checkpoint.DURING_EXECUTION, kind: "tool", name, args } as const;
    let refused = await refusalOf(deps, action, ctx);
    const approvalId =
      refused === null || deps.policy === null
        ? null
        : await selfApprovable(deps.policy, refused, ctx);
    // A call paused for its approval is the same call when the handler runs again after the
    // answer: its id comes from the approval, so the chat shows one tool part.
    const callId = approvalId === null ? newRequestId() : `call_${approvalId}`;
    const input = toolInput(args);
    await recorder("tool.started", {
      tool: String(name),
      callId,
      ...(input === undefined ? {} : { input }),
    }).catch(() => undefined);
    let denied = false;
    if (approvalId !== null && deps.policy !== null) {
      const answer = await answerToolApproval(deps.policy, ctx, {
        approvalId,
        toolCallId: callId,
        tool: String(name),
        ...(input === undefined ? {} : { input }),
      });
      refused = await refusalOf(deps, action, ctx);
      denied = answer.decision === "deny" && refused !== null;
    }
    const result = await callTool(name, args, options, refused);
    await recorder("tool.completed", {
      tool: String(name),
      callId,
      status: result.status,
      durationMs: result.durationMs,
      error: result.error,
      ...(denied ? { approval: "denied" } : {}),
      ...(result.status === ToolStatus.SUCCESS ? outputOf(result.output) : {}),
    }).catch(() => undefined);
    return result;
  };
  const callTool = async (
    name: string,
    args: unknown,
    options?: ToolCallOptions,
    /** The policy's answer when the caller already asked it. */
    asked?: PolicyDecision | null,
  ): Promise<ToolResult> => {
    const refused =
      asked !== undefined
        ? asked
        : await refusalOf(
            deps,
            { checkpoint: Checkpoint.DURING_EXECUTION, kind: "tool", name, args },
            ctx,
          );
    if (refused !== null) {
      return Object.freeze({
        status: ToolStatus.PERMISSION_DENIED,
        output: null,
        error: refusalText(refused),
        durationMs: 0,
      });
    }
    if (tools === null) {
      return Object.freeze({
        status: ToolStatus.NOT_FOUND,
        output: null,
        error: `No tool "${name}": this orchestrator has no tool manager (options.tools).`,
        durationMs: 0,
      });
    }
    const result = await callToolStage(tools, name, args, ctx, options);
    if (
      stats !== null &&
      result.status !== ToolStatus.NOT_FOUND &&
      result.status !== ToolStatus.PERMISSION_DENIED
    ) {
      await stats.record(
        "tool",
        name,
        {
          ok: result.status === ToolStatus.SUCCESS,
          latencyMs: result.durationMs,
          ...(result.error === null ? {} : { error: result.error }),
        },
        ctx,
      );
    }
    return result;
  };
  return Object.freeze({
    ctx,
    tools: Object.freeze({
      discover: async () => (tools === null ? [] : discoverStage(tools, ctx)),
      call: async (name: string, args: unknown = {}, options?: ToolCallOptions) =>
        call(name, args, options),
    }),
    memory: Object.freeze({
      recall: async (query: Parameters<Memory["recall"]>[0] = "") => {
        if (memory === null) throw noMemory();
        return recallStage(memory, query, ctx);
      },
      store: async (event: Parameters<Memory["store"]>[0]) => {
        if (memory === null) throw noMemory();
        return storeStage(memory, event, ctx);
      },
    }),
    authorize: async (action: Omit<PolicyAction, "checkpoint">) =>
      refusalOf(deps, { ...action, checkpoint: Checkpoint.DURING_EXECUTION }, ctx),
    delegate: async (handler: string, input: AgentInputInit | string): Promise<AgentResult> => {
      const init = typeof input === "string" ? { message: input } : input;
      const refused = await refusalOf(
        deps,
        {
          checkpoint: Checkpoint.DURING_EXECUTION,
          kind: "delegate",
          name: handler,
          message: typeof init?.message === "string" ? init.message : "",
        },
        ctx,
      );
      if (refused !== null) {
        return agentResult(handler, {
          status: AgentStatus.ERROR,
          error: refusalText(refused),
          data: {
            code: refused.code ?? ErrorCode.POLICY_DENIED,
            ...(refused.approvalId === undefined ? {} : { approvalId: refused.approvalId }),
          },
        });
      }
      const started = performance.now();
      let result: AgentResult;
      try {
        result = await runtime.delegate(handler, init, ctx);
      } catch (err) {
        // Bad arguments (an invalid input) are the calling handler's bug: report, do not crash it.
        result = thrownResult(handler, err);
      }
      if (stats !== null) {
        await stats.record(
          "agent",
          handler,
          {
            ok: result.status === AgentStatus.SUCCESS,
            latencyMs: performance.now() - started,
            ...(result.error === null ? {} : { error: result.error }),
          },
          ctx,
        );
      }
      return result;
    },
  });
}
