import type { ExecContext } from "../context/exec-context.js";
import { ErrorCode, NervaError } from "../errors.js";
import type { Memory } from "../memory/types.js";
import {
  Checkpoint,
  type PolicyAction,
  type PolicyDecision,
  type PolicyEngine,
} from "../policy/types.js";
import { errorResult, messageOf } from "../runtime/results.js";
import type { AgentRuntime } from "../runtime/types.js";
import {
  ToolStatus,
  type ToolCallOptions,
  type ToolManager,
  type ToolResult,
} from "../tools/types.js";
import { agentResult, type AgentInputInit, type AgentResult } from "../types/agent.js";
import { AgentStatus } from "../types/status.js";
import type { StatsRecorder } from "./stats.js";
import type { AgentKit } from "./types.js";

/** The primitives a kit reaches. */
export interface KitDeps {
  readonly runtime: AgentRuntime;
  readonly tools: ToolManager | null;
  readonly memory: Memory | null;
  readonly policy: PolicyEngine | null;
  readonly stats: StatsRecorder | null;
}

/**
 * Asks the policy; a policy that throws refuses (fail closed), recorded as a `policy.error`
 * event. Returns `null` when allowed, else the refusal.
 */
export async function checkPolicy(
  policy: PolicyEngine | null,
  action: PolicyAction,
  ctx: ExecContext,
): Promise<PolicyDecision | null> {
  if (policy === null) return null;
  let decision: PolicyDecision;
  try {
    decision = await policy.evaluate(action, ctx);
  } catch (err) {
    ctx.event("policy.error", { checkpoint: action.checkpoint, error: messageOf(err) });
    return {
      effect: "deny",
      checkpoint: action.checkpoint,
      code: ErrorCode.POLICY_DENIED,
      reason: `The policy failed (${messageOf(err)}), so the action is refused.`,
      rule: null,
    };
  }
  return decision.effect === "allow" ? null : decision;
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

/** Builds the {@link AgentKit} of one handler invocation, bound to `ctx`. */
export function createKit(deps: KitDeps, ctx: ExecContext): AgentKit {
  const { runtime, tools, memory, policy, stats } = deps;
  return Object.freeze({
    ctx,
    tools: Object.freeze({
      discover: async () => (tools === null ? [] : tools.discover(ctx)),
      call: async (
        name: string,
        args: unknown = {},
        options?: ToolCallOptions,
      ): Promise<ToolResult> => {
        const refused = await checkPolicy(
          policy,
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
        const result = await tools.call(name, args, ctx, options);
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
      },
    }),
    memory: Object.freeze({
      recall: async (query: Parameters<Memory["recall"]>[0] = "") => {
        if (memory === null) throw noMemory();
        return memory.recall(query, ctx);
      },
      store: async (event: Parameters<Memory["store"]>[0]) => {
        if (memory === null) throw noMemory();
        return memory.store(event, ctx);
      },
    }),
    authorize: (action: Omit<PolicyAction, "checkpoint">) =>
      checkPolicy(policy, { ...action, checkpoint: Checkpoint.DURING_EXECUTION }, ctx),
    delegate: async (handler: string, input: AgentInputInit | string): Promise<AgentResult> => {
      const init = typeof input === "string" ? { message: input } : input;
      const refused = await checkPolicy(
        policy,
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
        result = errorResult(handler, messageOf(err));
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
