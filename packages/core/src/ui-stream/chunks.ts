// A run's events as the chunks of the AI SDK's UI message stream (the `ai` package, v6:
// ui-message-stream/ui-message-chunks.ts), the protocol `useChat` reads. JSON shapes only: the
// `ai` package is not a dependency of the core.
import { clientRunEvent } from "../http/client-view.js";
import { ANSWERED_AGAIN, ToolCalls, failureOf, usageOf } from "../http/run-parts.js";
import { RunEventType, type RunEvent } from "../runs/types.js";
import type { JsonValue } from "../types/agent.js";

/**
 * One chunk of the AI SDK UI message stream, as Nerva writes it (a subset of the `ai` package's
 * `UIMessageChunk`: text, tool calls, data parts, steps, errors, start and finish).
 *
 * @example
 * const chunk: UIMessageChunk = { type: "text-delta", id: "text-4", delta: "Hello" };
 */
export type UIMessageChunk =
  | { readonly type: "start"; readonly messageId: string }
  | { readonly type: "start-step" | "finish-step" }
  | { readonly type: "text-start" | "text-end"; readonly id: string }
  | { readonly type: "text-delta"; readonly id: string; readonly delta: string }
  | { readonly type: "reasoning-start" | "reasoning-end"; readonly id: string }
  | { readonly type: "reasoning-delta"; readonly id: string; readonly delta: string }
  | { readonly type: "tool-input-start"; readonly toolCallId: string; readonly toolName: string }
  | {
      readonly type: "tool-input-delta";
      readonly toolCallId: string;
      readonly inputTextDelta: string;
    }
  | {
      readonly type: "tool-input-available";
      readonly toolCallId: string;
      readonly toolName: string;
      readonly input: JsonValue;
    }
  | {
      readonly type: "tool-output-available";
      readonly toolCallId: string;
      readonly output: JsonValue;
    }
  | { readonly type: "tool-output-error"; readonly toolCallId: string; readonly errorText: string }
  | {
      readonly type: "tool-approval-request";
      readonly approvalId: string;
      readonly toolCallId: string;
    }
  | { readonly type: "tool-output-denied"; readonly toolCallId: string }
  | { readonly type: `data-nerva-${string}`; readonly id: string; readonly data: JsonValue }
  | { readonly type: "error"; readonly errorText: string }
  | { readonly type: "abort"; readonly reason: string }
  | {
      readonly type: "finish";
      readonly finishReason: "stop" | "error" | "other" | "tool-calls";
      readonly messageMetadata: UIMessageMetadata;
    };

/**
 * The `messageMetadata` of the `finish` chunk: the run, how it ended, and the tokens and cost its
 * final attempt spent (when any were recorded).
 *
 * @example
 * const usage = (message.metadata as UIMessageMetadata).usage?.totalTokens;
 */
export interface UIMessageMetadata {
  readonly runId: string;
  readonly status: string;
  readonly usage?: {
    readonly promptTokens: number;
    readonly completionTokens: number;
    readonly totalTokens: number;
    readonly costUsd: number;
  };
}

/** Events shown as `data-nerva-…` parts (their data as a client may see it). */
const DATA_EVENTS: ReadonlySet<string> = new Set<string>([
  RunEventType.NODE_STARTED,
  RunEventType.NODE_COMPLETED,
  RunEventType.NODE_FAILED,
  RunEventType.RETRYING,
  RunEventType.RECLAIMED,
  RunEventType.RELEASED,
  RunEventType.RESUMED,
]);

const NO_CHUNKS: readonly UIMessageChunk[] = Object.freeze([]);

/**
 * Turns a run's events, in `seq` order from the first, into UI message chunks. Stateful: it knows
 * which text part and which tool calls are open, so a stream resumed after some event is fed the
 * events before it too and shows only the chunks of the later ones (see `toUIMessageChunks`).
 * Events are shown as `clientRunEvent` shows them: no internal error text reaches the chunks.
 */
export class UIChunker {
  readonly #runId: string;
  #text: string | null = null;
  /** The open reasoning part's id. */
  #reasoning: string | null = null;
  #inStep = false;
  #streamed = false;
  readonly #calls = new ToolCalls();
  /** True once a final event was turned into chunks. */
  ended = false;
  /**
   * The seq of the last `run.paused` shown as a tool approval request (`tool-approval-request`),
   * or 0: a stream that ends there lets the client answer it (see {@link UIChunker.endAtApproval}).
   */
  approvalSeq = 0;

  constructor(runId: string) {
    this.#runId = runId;
  }

  /** The chunks of one event (none for the events a chat does not show). */
  push(raw: RunEvent): readonly UIMessageChunk[] {
    if (this.ended) return NO_CHUNKS;
    const e = clientRunEvent(raw);
    const out: UIMessageChunk[] = [];
    switch (e.type) {
      case RunEventType.STARTED:
        this.#step(out);
        return out;
      case RunEventType.OUTPUT_DELTA: {
        const chunk = e.data.chunk;
        if (typeof chunk !== "string" || chunk === "") return NO_CHUNKS;
        this.#step(out);
        if (e.data.kind === "reasoning") this.#reason(out, chunk, e.seq);
        else this.#write(out, chunk, e.seq);
        return out;
      }
      case RunEventType.TOOL_STARTED:
        this.#toolStarted(out, e);
        return out;
      case RunEventType.TOOL_COMPLETED:
        this.#toolCompleted(out, e);
        return out;
      case RunEventType.PAUSED:
        if (this.#approvalRequest(out, e)) return out;
        // The answer goes on once someone answers: the stream stays open (a client that leaves
        // meanwhile gets the whole answer again on reconnect).
        this.#data(out, e);
        this.#endStep(out);
        return out;
      case RunEventType.SUCCEEDED: {
        const output = e.data.output;
        // A handler that did not stream: its answer is the message's text.
        if (!this.#streamed && typeof output === "string" && output !== "") {
          this.#step(out);
          this.#write(out, output, e.seq);
        }
        return this.#finish(out, e, "stop");
      }
      case RunEventType.FAILED:
      case RunEventType.TIMED_OUT: {
        this.#closeText(out);
        out.push({ type: "error", errorText: failureOf(e).message });
        return this.#finish(out, e, "error");
      }
      case RunEventType.CANCELLED:
        this.#closeText(out);
        out.push({ type: "abort", reason: "cancelled" });
        return this.#finish(out, e, "other");
      default:
        if (!DATA_EVENTS.has(e.type)) return NO_CHUNKS;
        if (ANSWERED_AGAIN.has(e.type)) {
          // Another execution answers again: what this one wrote stays, closed, in its own step.
          this.#data(out, e);
          this.#endStep(out);
          return out;
        }
        this.#data(out, e);
        return out;
    }
  }

  /**
   * Ends the message at the tool approval request just shown (the run waits for its answer):
   * `finish` with `finishReason: "tool-calls"` and status `paused`, as the AI SDK ends a step
   * whose tool call needs approval, so that `useChat` lets its user answer and sends the answer.
   */
  endAtApproval(): readonly UIMessageChunk[] {
    this.ended = true;
    return [
      {
        type: "finish",
        finishReason: "tool-calls",
        messageMetadata: { runId: this.#runId, status: "paused" },
      },
    ];
  }

  /**
   * A tool call's approval pause (the kit's, see `kit.tools.call`) for a call this stream shows:
   * the protocol's `tool-approval-request`, its id the policy's approval id. False for any other
   * pause.
   */
  #approvalRequest(out: UIMessageChunk[], e: RunEvent): boolean {
    const d = e.data.data;
    if (e.data.kind !== "approval" || typeof d !== "object" || d === null || Array.isArray(d)) {
      return false;
    }
    const { approvalId, toolCallId } = d;
    if (typeof approvalId !== "string" || typeof toolCallId !== "string") return false;
    if (!this.#calls.has(toolCallId)) return false;
    this.#closeText(out);
    out.push({ type: "tool-approval-request", approvalId, toolCallId });
    this.#endStep(out);
    this.approvalSeq = e.seq;
    return true;
  }

  #step(out: UIMessageChunk[]): void {
    if (this.#inStep) return;
    this.#inStep = true;
    out.push({ type: "start-step" });
  }

  #endStep(out: UIMessageChunk[]): void {
    this.#closeText(out);
    if (!this.#inStep) return;
    this.#inStep = false;
    out.push({ type: "finish-step" });
  }

  #write(out: UIMessageChunk[], delta: string, seq: number): void {
    this.#closeReasoning(out);
    this.#streamed = true;
    if (this.#text === null) {
      this.#text = `text-${seq}`;
      out.push({ type: "text-start", id: this.#text });
    }
    out.push({ type: "text-delta", id: this.#text, delta });
  }

  /** A chunk of the model's reasoning: a reasoning part apart from the answer's text. */
  #reason(out: UIMessageChunk[], delta: string, seq: number): void {
    if (this.#text !== null) {
      out.push({ type: "text-end", id: this.#text });
      this.#text = null;
    }
    if (this.#reasoning === null) {
      this.#reasoning = `reasoning-${seq}`;
      out.push({ type: "reasoning-start", id: this.#reasoning });
    }
    out.push({ type: "reasoning-delta", id: this.#reasoning, delta });
  }

  #closeReasoning(out: UIMessageChunk[]): void {
    if (this.#reasoning === null) return;
    out.push({ type: "reasoning-end", id: this.#reasoning });
    this.#reasoning = null;
  }

  /** Ends the open text or reasoning part. */
  #closeText(out: UIMessageChunk[]): void {
    this.#closeReasoning(out);
    if (this.#text === null) return;
    out.push({ type: "text-end", id: this.#text });
    this.#text = null;
  }

  #data(out: UIMessageChunk[], e: RunEvent): void {
    this.#closeText(out);
    out.push({
      type: `data-nerva-${e.type.replace(/\./g, "-")}`,
      id: String(e.seq),
      data: { ...e.data, seq: e.seq, at: e.at },
    });
  }

  #toolStarted(out: UIMessageChunk[], e: RunEvent): void {
    const call = this.#calls.start(e);
    // The same call started again (the handler ran again after its approval was answered): its
    // part is already shown.
    if (call === null) return;
    this.#step(out);
    this.#closeText(out);
    const { toolCallId, toolName, input } = call;
    out.push({ type: "tool-input-start", toolCallId, toolName });
    // Nerva knows a call's input whole: its JSON text is the one delta, then the parsed input.
    out.push({ type: "tool-input-delta", toolCallId, inputTextDelta: JSON.stringify(input) });
    out.push({ type: "tool-input-available", toolCallId, toolName, input });
  }

  #toolCompleted(out: UIMessageChunk[], e: RunEvent): void {
    const call = this.#calls.complete(e);
    // A completion whose start this stream never saw has no part to complete.
    if (call === null) return;
    this.#closeText(out);
    if (call.ok) {
      out.push({ type: "tool-output-available", toolCallId: call.toolCallId, output: call.output });
    } else if (call.status === "denied") {
      out.push({ type: "tool-output-denied", toolCallId: call.toolCallId });
    } else {
      out.push({
        type: "tool-output-error",
        toolCallId: call.toolCallId,
        errorText: `the tool call ended: ${call.status}`,
      });
    }
  }

  #finish(
    out: UIMessageChunk[],
    e: RunEvent,
    finishReason: "stop" | "error" | "other",
  ): readonly UIMessageChunk[] {
    this.#endStep(out);
    this.ended = true;
    const usage = usageOf(e);
    const metadata: UIMessageMetadata = {
      runId: this.#runId,
      status: e.type.slice("run.".length),
      ...(usage === null
        ? {}
        : {
            usage: {
              promptTokens: usage.prompt_tokens,
              completionTokens: usage.completion_tokens,
              totalTokens: usage.total_tokens,
              costUsd: usage.cost_usd,
            },
          }),
    };
    out.push({ type: "finish", finishReason, messageMetadata: metadata });
    return out;
  }
}
