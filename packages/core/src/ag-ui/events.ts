// A run's events as AG-UI events (the protocol of @ag-ui/core 1.0: core/src/types.ts), as plain
// JSON objects: the mapping needs nothing from @ag-ui/core at runtime, the writer encodes them
// with @ag-ui/encoder.
import { clientData } from "../responder/failure-text.js";
import { clientRunEvent } from "../http/client-view.js";
import { ANSWERED_AGAIN, ToolCalls, failureOf, usageOf } from "../http/run-parts.js";
import { RESERVED_EVENT_PREFIXES, RunEventType, type RunEvent } from "../runs/types.js";
import type { JsonValue } from "../types/agent.js";
import { statePatch } from "./state-patch.js";

/**
 * One AG-UI event as Nerva writes it: `type` is one of @ag-ui/core's `EventType` values
 * (`RUN_STARTED`, `TEXT_MESSAGE_CONTENT`, `TOOL_CALL_START`, `STATE_DELTA`, `RUN_FINISHED`…), the
 * other fields those of that event in @ag-ui/core 1.0.
 *
 * @example
 * const event: AgUiEvent = { type: "TEXT_MESSAGE_CONTENT", messageId: "m1", delta: "Hello" };
 */
export interface AgUiEvent {
  readonly type: string;
  readonly [field: string]: unknown;
}

type State = Record<string, unknown>;
const NONE: readonly AgUiEvent[] = Object.freeze([]);

/** Whether `type` is an app's own event (`ctx.run.emit`), not one of Nerva's. */
const isCustom = (type: string): boolean =>
  !RESERVED_EVENT_PREFIXES.some((p) => type.startsWith(p));

/** The state a graph's `run.paused` carries (its snapshot, before `clientRunEvent` drops it). */
function pausedState(e: RunEvent): State | null {
  const inner = e.data.data;
  if (typeof inner !== "object" || inner === null || Array.isArray(inner)) return null;
  const graph = inner.graph;
  if (typeof graph !== "object" || graph === null || Array.isArray(graph)) return null;
  const state = graph.state;
  return typeof state === "object" && state !== null && !Array.isArray(state) ? state : null;
}

/**
 * The interrupt id of a pause: the run's id and the pause's key, which the answer (a resume
 * entry of the next RunAgentInput) names.
 */
export const interruptId = (runId: string, key: string): string => `${runId}:${key}`;

/**
 * Turns one run's events, in `seq` order from the first, into the AG-UI events of one AG-UI run
 * (`threadId`, `runId`: the client's). Stateful: it knows the open text message, tool calls,
 * steps (graph nodes) and the last state shown. Events are read as `clientRunEvent` shows them.
 */
export class AgUiMapper {
  readonly #run: string;
  readonly #ids: { readonly threadId: string; readonly runId: string };
  readonly #calls = new ToolCalls();
  readonly #steps = new Set<string>();
  #text: string | null = null;
  /** The open reasoning message's id. */
  #reasoning: string | null = null;
  #streamed = false;
  #graph = false;
  #state: State | null = null;

  constructor(nervaRunId: string, threadId: string, runId: string) {
    this.#run = nervaRunId;
    this.#ids = { threadId, runId };
  }

  /** STATE_SNAPSHOT the first time, then STATE_DELTA (none when nothing changed). */
  state(next: State, out: AgUiEvent[] = []): AgUiEvent[] {
    const before = this.#state;
    this.#state = next;
    this.#graph = true;
    if (before === null) out.push({ type: "STATE_SNAPSHOT", snapshot: next });
    else {
      const delta = statePatch(before, next);
      if (delta.length > 0) out.push({ type: "STATE_DELTA", delta });
    }
    return out;
  }

  /**
   * The AG-UI events of one run event. `endState`: a graph's state when `raw` ends the run
   * (shown as a delta before RUN_FINISHED or RUN_ERROR).
   */
  push(raw: RunEvent, endState: State | null = null): readonly AgUiEvent[] {
    const e = clientRunEvent(raw);
    const out: AgUiEvent[] = [];
    switch (e.type) {
      case RunEventType.OUTPUT_DELTA: {
        const chunk = e.data.chunk;
        if (typeof chunk !== "string" || chunk === "") return NONE;
        if (e.data.kind === "reasoning") this.#reason(out, chunk, e.seq);
        else this.#write(out, chunk, e.seq);
        return out;
      }
      case RunEventType.TOOL_STARTED: {
        const call = this.#calls.start(e);
        // The same call started again (its handler ran again after an approval): shown once.
        if (call === null) return NONE;
        this.#closeText(out);
        out.push(
          { type: "TOOL_CALL_START", toolCallId: call.toolCallId, toolCallName: call.toolName },
          {
            type: "TOOL_CALL_ARGS",
            toolCallId: call.toolCallId,
            delta: JSON.stringify(call.input),
          },
          { type: "TOOL_CALL_END", toolCallId: call.toolCallId },
        );
        return out;
      }
      case RunEventType.TOOL_COMPLETED: {
        const call = this.#calls.complete(e);
        if (call === null) return NONE;
        this.#closeText(out);
        const content = call.ok
          ? JSON.stringify(call.output)
          : `the tool call ended: ${call.status}`;
        out.push({
          type: "TOOL_CALL_RESULT",
          messageId: `${this.#run}-tool-${e.seq}`,
          toolCallId: call.toolCallId,
          role: "tool",
          content,
        });
        return out;
      }
      case RunEventType.NODE_STARTED: {
        this.#closeText(out);
        this.#graph = true;
        const node = String(e.data.node);
        this.#steps.add(node);
        out.push({ type: "STEP_STARTED", stepName: node });
        return out;
      }
      case RunEventType.NODE_COMPLETED:
      case RunEventType.NODE_FAILED: {
        const node = String(e.data.node);
        if (!this.#steps.delete(node)) return NONE;
        this.#closeText(out);
        out.push({ type: "STEP_FINISHED", stepName: node });
        return out;
      }
      case RunEventType.PAUSED: {
        this.#close(out);
        const state = pausedState(raw);
        if (state !== null) this.state(state, out);
        const key = String(e.data.key);
        const prompt = e.data.prompt;
        const inner = e.data.data;
        const data =
          typeof inner === "object" && inner !== null && !Array.isArray(inner)
            ? clientData(inner)
            : {};
        out.push({
          type: "RUN_FINISHED",
          ...this.#ids,
          outcome: {
            type: "interrupt",
            interrupts: [
              {
                id: interruptId(this.#run, key),
                reason: String(e.data.kind ?? "input"),
                ...(typeof prompt === "string" ? { message: prompt } : {}),
                metadata: { nerva: { runId: this.#run, key, data } },
              },
            ],
          },
        });
        return out;
      }
      case RunEventType.SUCCEEDED: {
        const output = e.data.output;
        // A handler that did not stream: its answer is the message's text (a graph's is the result).
        if (!this.#streamed && !this.#graph && typeof output === "string" && output !== "") {
          this.#write(out, output, e.seq);
        }
        this.#close(out);
        if (endState !== null) this.state(endState, out);
        const usage = usageOf(e);
        out.push({
          type: "RUN_FINISHED",
          ...this.#ids,
          ...(output === undefined ? {} : { result: output }),
          outcome: { type: "success" },
          ...(usage === null
            ? {}
            : {
                usage: [
                  {
                    inputTokens: usage.prompt_tokens,
                    outputTokens: usage.completion_tokens,
                    totalTokens: usage.total_tokens,
                  },
                ],
                metadata: { nerva: { runId: this.#run, costUsd: usage.cost_usd } },
              }),
        });
        return out;
      }
      case RunEventType.FAILED:
      case RunEventType.TIMED_OUT: {
        this.#close(out);
        if (endState !== null) this.state(endState, out);
        const { code, message } = failureOf(e);
        out.push({ type: "RUN_ERROR", message, code });
        return out;
      }
      case RunEventType.CANCELLED:
        this.#close(out);
        if (endState !== null) this.state(endState, out);
        out.push({ type: "RUN_FINISHED", ...this.#ids, outcome: { type: "cancelled" } });
        return out;
      default:
        if (ANSWERED_AGAIN.has(e.type)) {
          // Another execution answers again: what this one wrote stays, closed.
          this.#close(out);
          this.#streamed = false;
          out.push({ type: "CUSTOM", name: `nerva.${e.type}`, value: { ...e.data, seq: e.seq } });
          return out;
        }
        if (!isCustom(e.type)) return NONE;
        out.push({ type: "CUSTOM", name: e.type, value: e.data as JsonValue });
        return out;
    }
  }

  #write(out: AgUiEvent[], delta: string, seq: number): void {
    this.#closeReasoning(out);
    this.#streamed = true;
    if (this.#text === null) {
      this.#text = `${this.#run}-text-${seq}`;
      out.push({ type: "TEXT_MESSAGE_START", messageId: this.#text, role: "assistant" });
    }
    out.push({ type: "TEXT_MESSAGE_CONTENT", messageId: this.#text, delta });
  }

  /** A chunk of the model's reasoning: a reasoning message apart from the answer's text. */
  #reason(out: AgUiEvent[], delta: string, seq: number): void {
    if (this.#text !== null) {
      out.push({ type: "TEXT_MESSAGE_END", messageId: this.#text });
      this.#text = null;
    }
    if (this.#reasoning === null) {
      this.#reasoning = `${this.#run}-reasoning-${seq}`;
      out.push(
        { type: "REASONING_START", messageId: this.#reasoning },
        { type: "REASONING_MESSAGE_START", messageId: this.#reasoning, role: "reasoning" },
      );
    }
    out.push({ type: "REASONING_MESSAGE_CONTENT", messageId: this.#reasoning, delta });
  }

  #closeReasoning(out: AgUiEvent[]): void {
    if (this.#reasoning === null) return;
    out.push(
      { type: "REASONING_MESSAGE_END", messageId: this.#reasoning },
      { type: "REASONING_END", messageId: this.#reasoning },
    );
    this.#reasoning = null;
  }

  /** Ends the open text or reasoning message. */
  #closeText(out: AgUiEvent[]): void {
    this.#closeReasoning(out);
    if (this.#text === null) return;
    out.push({ type: "TEXT_MESSAGE_END", messageId: this.#text });
    this.#text = null;
  }

  /** Ends what is open (the text message, the steps) before the run ends or pauses. */
  #close(out: AgUiEvent[]): void {
    this.#closeText(out);
    for (const node of this.#steps) out.push({ type: "STEP_FINISHED", stepName: node });
    this.#steps.clear();
  }
}
