// What every protocol adapter (ui-stream, ag-ui) reads the same way from a run's events, as a
// client may see them (`clientRunEvent`): tool calls and their answers, the usage of a finished
// run, the text of a failure, and the events after which the answer is written again.
import { RunEventType, type RunEvent } from "../runs/types.js";
import type { JsonValue } from "../types/agent.js";
import type { TokenUsageWire } from "../types/usage.js";

/**
 * Events after which another execution writes the answer again from its start (a handler runs
 * again after a resume, a retry or a takeover; only its committed steps are skipped).
 */
export const ANSWERED_AGAIN: ReadonlySet<string> = new Set<string>([
  RunEventType.RESUMED,
  RunEventType.RETRYING,
  RunEventType.RECLAIMED,
  RunEventType.RELEASED,
]);

/** A tool call that `tool.started` opened. */
export interface StartedToolCall {
  readonly toolCallId: string;
  readonly toolName: string;
  readonly input: JsonValue;
}

/**
 * A tool call that `tool.completed` answered: its output, or the status it ended with
 * (`denied` when its approval was denied and it never ran).
 */
export type CompletedToolCall =
  | { readonly toolCallId: string; readonly ok: true; readonly output: JsonValue }
  | { readonly toolCallId: string; readonly ok: false; readonly status: string };

/**
 * The open tool calls of a run, by call id: the event's `callId` when it has one, else
 * `call-<seq>` of its `tool.started`, matched to completions per tool name in start order.
 */
export class ToolCalls {
  readonly #open = new Map<string, string>();
  readonly #waiting = new Map<string, string[]>();
  readonly #seen = new Set<string>();

  /** Whether the call `toolCallId` was started in this stream. */
  has(toolCallId: string): boolean {
    return this.#seen.has(toolCallId);
  }

  /**
   * The call `e` starts, or `null` when a call of the same id was started before: the handler
   * ran again (after the call's approval was answered) and the call is already shown.
   */
  start(e: RunEvent): StartedToolCall | null {
    const toolName = String(e.data.tool);
    const given = e.data.callId;
    const toolCallId = typeof given === "string" ? given : `call-${e.seq}`;
    if (this.#seen.has(toolCallId)) return null;
    this.#seen.add(toolCallId);
    this.#open.set(toolCallId, toolName);
    if (typeof given !== "string") {
      const list = this.#waiting.get(toolName) ?? [];
      list.push(toolCallId);
      this.#waiting.set(toolName, list);
    }
    return { toolCallId, toolName, input: e.data.input ?? {} };
  }

  /** The call `e` completes, or `null` when its start was never seen. */
  complete(e: RunEvent): CompletedToolCall | null {
    const given = e.data.callId;
    const toolCallId =
      typeof given === "string" ? given : this.#waiting.get(String(e.data.tool))?.shift();
    if (toolCallId === undefined || !this.#open.delete(toolCallId)) return null;
    // The requester denied the call's approval: it never ran.
    if (e.data.approval === "denied") return { toolCallId, ok: false, status: "denied" };
    if (e.data.status === "success") return { toolCallId, ok: true, output: e.data.output ?? null };
    const status = typeof e.data.status === "string" ? e.data.status : "error";
    return { toolCallId, ok: false, status };
  }
}

/** The usage a final event carries (`run.succeeded`, `run.failed`…), or `null`. */
export function usageOf(e: RunEvent): TokenUsageWire | null {
  const usage = e.data.usage;
  if (typeof usage !== "object" || usage === null || Array.isArray(usage)) return null;
  return {
    prompt_tokens: Number(usage.prompt_tokens ?? 0),
    completion_tokens: Number(usage.completion_tokens ?? 0),
    total_tokens: Number(usage.total_tokens ?? 0),
    cost_usd: Number(usage.cost_usd ?? 0),
  };
}

/** The error of a failed or timed-out run as `clientRunEvent` shows it: `{ code, message }`. */
export function failureOf(e: RunEvent): { code: string; message: string } {
  const error = e.data.error;
  if (typeof error !== "object" || error === null || Array.isArray(error)) {
    return { code: "INTERNAL", message: "the run failed" };
  }
  return { code: String(error.code ?? "INTERNAL"), message: String(error.message) };
}
