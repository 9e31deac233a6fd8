import type { ServerResponse } from "node:http";
import { toHttpError } from "../http/status.js";
import { writeSSE } from "../http/sse.js";
import type { SSEOutcome } from "../http/sse-event-source.js";
import { FINAL_EVENT_TYPES, RunEventType, type RunEvent } from "../runs/types.js";
import { AgUiMapper, type AgUiEvent } from "./events.js";
import { loadEncoder, type AgUiEncoder } from "./load.js";

/** The AG-UI protocol version Nerva speaks (`PROTOCOL_VERSION` of @ag-ui/core 1.0). */
const PROTOCOL_VERSION = "1.0";

/**
 * One AG-UI event to send and, on the last event of each run event, that event's `seq` (the SSE
 * id).
 *
 * @example
 * for await (const m of toAgUiEvents(queue.events(id), options)) console.log(m.id, m.event.type);
 */
export interface AgUiMessage {
  readonly event: AgUiEvent;
  readonly id?: number;
}

/**
 * Options of {@link toAgUiEvents} and {@link writeAgUiStream}.
 *
 * @example
 * const options: AgUiStreamOptions = { threadId: input.threadId, runId: input.runId, nervaRunId: run.id };
 */
export interface AgUiStreamOptions {
  /** The AG-UI thread and run this answer is (the client's `RunAgentInput.threadId` / `runId`). */
  readonly threadId: string;
  readonly runId: string;
  /** The Nerva run whose events these are (ids of messages and interrupts are made from it). */
  readonly nervaRunId: string;
  /**
   * Show only what the events after this seq make (an AG-UI run that continues a paused one
   * starts after its `run.paused`). `events` still start at the run's first. Default 0: all.
   */
  readonly afterSeq?: number;
  /**
   * A graph's state: `initial` is shown as STATE_SNAPSHOT after RUN_STARTED; `end()` reads the
   * state the run ended with, shown as STATE_DELTA before its last event. A pause shows the
   * state it carries.
   */
  readonly state?: {
    readonly initial: Record<string, unknown>;
    readonly end: () => Promise<Record<string, unknown> | null>;
  };
}

/**
 * A run's events (from its first: `queue.events(id)`) as the events of one AG-UI run:
 * RUN_STARTED, STATE_SNAPSHOT of a graph's state, then per event — TEXT_MESSAGE_START / _CONTENT
 * / _END from `output.delta` (or from a non-streaming answer's output), TOOL_CALL_START / _ARGS /
 * _END from `tool.started`, TOOL_CALL_RESULT from `tool.completed`, STEP_STARTED / _FINISHED from
 * a graph's `node.*`, CUSTOM for `run.resumed`, `run.retrying`, `run.reclaimed`, `run.released`
 * and an app's own events — and last RUN_FINISHED (`outcome` success with the result and usage,
 * `cancelled`, or `interrupt` when the run pauses: one interrupt, answered by the next
 * RunAgentInput's `resume`) or RUN_ERROR with the client-safe text of the failure. A source that
 * fails ends with RUN_ERROR (no internal text); never throws. Leaving the loop returns `events`.
 *
 * @example
 * for await (const m of toAgUiEvents(queue.events(run.id), { threadId, runId, nervaRunId: run.id })) send(m.event);
 */
export async function* toAgUiEvents(
  events: AsyncIterable<RunEvent>,
  options: AgUiStreamOptions,
): AsyncGenerator<AgUiMessage, void, undefined> {
  const afterSeq = options.afterSeq ?? 0;
  const mapper = new AgUiMapper(options.nervaRunId, options.threadId, options.runId);
  yield {
    event: {
      type: "RUN_STARTED",
      threadId: options.threadId,
      runId: options.runId,
      protocolVersion: PROTOCOL_VERSION,
    },
  };
  try {
    if (options.state !== undefined) {
      for (const event of mapper.state(options.state.initial)) yield { event };
    }
    for await (const e of events) {
      const shown = e.seq > afterSeq;
      const last = shown && (FINAL_EVENT_TYPES.has(e.type) || e.type === RunEventType.PAUSED);
      const end = last && FINAL_EVENT_TYPES.has(e.type) ? await options.state?.end() : null;
      const out = mapper.push(e, end ?? null);
      if (shown) {
        const n = out.length - 1;
        for (let i = 0; i < n; i++) yield { event: out[i] as AgUiEvent };
        if (n >= 0) yield { event: out[n] as AgUiEvent, id: e.seq };
      }
      if (last) return;
    }
  } catch (err) {
    const { body } = toHttpError(err);
    yield { event: { type: "RUN_ERROR", message: body.error.message, code: body.error.code } };
  }
}

/**
 * Writes a run's events to `res` as an AG-UI event stream ({@link toAgUiEvents}, each event
 * encoded by @ag-ui/encoder's `EventEncoder` as Server-Sent Events, through `writeSSE`: at the
 * client's pace, `id:` = the event's seq). A client that leaves stops the reading of `events`,
 * never the run. Resolves with how the response ended; MISSING_DEPENDENCY (before anything is
 * written) when `@ag-ui/encoder` is not installed.
 *
 * @example
 * await writeAgUiStream(res, queue.events(run.id), { threadId, runId, nervaRunId: run.id });
 */
export async function writeAgUiStream(
  res: ServerResponse,
  events: AsyncIterable<RunEvent>,
  options: AgUiStreamOptions & { readonly heartbeatSeconds?: number | false },
): Promise<SSEOutcome> {
  const encoder = await loadEncoder();
  return writeSSE(res, toAgUiEvents(events, options), null, {
    message: (m) => {
      const data = encodeEvent(encoder, m.event);
      return m.id === undefined ? { data } : { data, id: m.id };
    },
    done: false,
    ...(options.heartbeatSeconds === undefined
      ? {}
      : { heartbeatSeconds: options.heartbeatSeconds }),
  });
}

/**
 * One event's JSON as @ag-ui/encoder writes it (its `data:` line without the frame, which the SSE
 * writer adds with the id). A streamed chunk (TEXT_MESSAGE_CONTENT: three string fields, none of
 * them null) is the same text as `JSON.stringify` — checked against the encoder in the tests — and
 * is written so, without the encoder's walk for null optional fields; every other event goes
 * through the encoder.
 */
export function encodeEvent(encoder: AgUiEncoder, event: AgUiEvent): string {
  if (event.type === "TEXT_MESSAGE_CONTENT") return JSON.stringify(event);
  // The encoder writes `data: <json>\n\n`.
  return encoder.encodeSSE(event).slice("data: ".length, -2);
}
