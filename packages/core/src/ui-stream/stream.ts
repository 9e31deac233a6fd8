import type { ServerResponse } from "node:http";
import { toHttpError } from "../http/status.js";
import { writeSSE } from "../http/sse.js";
import type { SSEMessage, SSEOutcome } from "../http/sse-event-source.js";
import type { RunEvent } from "../runs/types.js";
import { UIChunker, type UIMessageChunk } from "./chunks.js";

/**
 * The response headers of a UI message stream besides the SSE ones: the protocol's marker
 * (`UI_MESSAGE_STREAM_HEADERS` of the `ai` package, ui-message-stream/ui-message-stream-headers.ts).
 *
 * @example
 * res.setHeader("x-vercel-ai-ui-message-stream", UI_MESSAGE_STREAM_HEADER["x-vercel-ai-ui-message-stream"]);
 */
export const UI_MESSAGE_STREAM_HEADER: Readonly<Record<string, string>> = Object.freeze({
  "x-vercel-ai-ui-message-stream": "v1",
});

/** The sentinel that ends a UI message stream (the `ai` package's JsonToSseTransformStream). */
export const UI_STREAM_DONE = "[DONE]";

/**
 * One message of a UI message stream: a chunk (or the `[DONE]` sentinel) and, on the last chunk
 * of each run event, that event's `seq` as the SSE id.
 *
 * @example
 * for await (const m of toUIMessageChunks(events, { runId })) console.log(m.id, m.data);
 */
export interface UIStreamMessage {
  readonly data: UIMessageChunk | typeof UI_STREAM_DONE;
  readonly id?: number;
}

/**
 * Options of {@link toUIMessageChunks}.
 *
 * @example
 * const options: UIChunksOptions = { runId: run.id, afterSeq: lastEventSeq(req) };
 */
export interface UIChunksOptions {
  /** The message id the client gets in `start` (the run's id: the same on every reconnect). */
  readonly runId: string;
  /**
   * Show only the chunks of events after this seq (a client that resumes where it was cut, with
   * `Last-Event-ID`). `events` must still start at the run's first event: the ones before build
   * the state (open text part, open tool calls) the later chunks continue. Default 0: all.
   */
  readonly afterSeq?: number;
  /**
   * Asked when a tool call's approval request is shown (a `run.paused` of the kit's tool
   * approval, at `seq`): true when the run still waits there, and the message then ends
   * (`finish` with `finishReason: "tool-calls"`, then `[DONE]`) so that `useChat` lets its user
   * answer. Without it, or when it answers false or fails, the stream goes on like through any
   * pause. `createChatRoutes` passes one that reads the run.
   */
  readonly waitsAt?: (seq: number) => Promise<boolean>;
}

/**
 * A run's events (from its first: `queue.events(id)`) as the AI SDK UI message stream: `start`
 * (the run's id as messageId), then per event its chunks — `start-step`, `text-start` /
 * `text-delta` / `text-end` from `output.delta`, `tool-input-start` / `tool-input-available` from
 * `tool.started`, `tool-output-available` / `tool-output-error` / `tool-output-denied` from
 * `tool.completed`,
 * `data-nerva-<type>` parts for `node.*`, `run.paused`, `run.resumed`, `run.retrying`,
 * `run.reclaimed`, `run.released`, `error` with the client-safe text of a failure — and a `finish`
 * with `{ runId, status, usage }` as `messageMetadata`, then `[DONE]`. A paused run's stream
 * stays open through the pause (`data-nerva-run-paused`) until the run ends; a tool call's
 * approval pause is the protocol's `tool-approval-request` (and, with `waitsAt`, ends the message). Each event's last
 * chunk carries the event's `seq` as its id, so `Last-Event-ID` resumes there. A source that
 * fails ends with an `error` chunk (no internal text) and `[DONE]`; never throws. Leaving the loop
 * returns `events`.
 *
 * @example
 * for await (const m of toUIMessageChunks(queue.events(run.id), { runId: run.id })) send(m);
 */
export async function* toUIMessageChunks(
  events: AsyncIterable<RunEvent>,
  options: UIChunksOptions,
): AsyncGenerator<UIStreamMessage, void, undefined> {
  const afterSeq = options.afterSeq ?? 0;
  const chunker = new UIChunker(options.runId);
  yield { data: { type: "start", messageId: options.runId } };
  try {
    for await (const event of events) {
      const chunks = chunker.push(event);
      if (event.seq > afterSeq) {
        const last = chunks.length - 1;
        for (let i = 0; i < last; i++) yield { data: chunks[i] as UIMessageChunk };
        if (last >= 0) yield { data: chunks[last] as UIMessageChunk, id: event.seq };
      }
      if (chunker.ended) break;
      if (chunker.approvalSeq === event.seq && event.seq > afterSeq) {
        const waits = options.waitsAt;
        if (waits !== undefined && (await waits(event.seq).catch(() => false))) {
          for (const chunk of chunker.endAtApproval()) yield { data: chunk };
          break;
        }
      }
    }
  } catch (err) {
    const { body } = toHttpError(err);
    yield { data: { type: "error", errorText: body.error.message } };
  }
  yield { data: UI_STREAM_DONE };
}

/**
 * Writes a run's events to `res` as the AI SDK UI message stream that `useChat` reads
 * ({@link toUIMessageChunks} through `writeSSE`: the protocol's header, `data:` lines of JSON,
 * `id:` = the event's seq, at the client's pace). A client that leaves stops the reading of
 * `events`, never the run. Resolves with how the response ended; never rejects.
 *
 * @example
 * await writeUIMessageStream(res, queue.events(run.id), { runId: run.id });
 */
export function writeUIMessageStream(
  res: ServerResponse,
  events: AsyncIterable<RunEvent>,
  options: UIChunksOptions & { readonly heartbeatSeconds?: number | false },
): Promise<SSEOutcome> {
  if (!res.headersSent) {
    for (const [name, value] of Object.entries(UI_MESSAGE_STREAM_HEADER)) {
      res.setHeader(name, value);
    }
  }
  return writeSSE(res, toUIMessageChunks(events, options), null, {
    message: sseMessage,
    done: false,
    ...(options.heartbeatSeconds === undefined
      ? {}
      : { heartbeatSeconds: options.heartbeatSeconds }),
  });
}

function sseMessage(m: UIStreamMessage): SSEMessage {
  return m.id === undefined ? { data: m.data } : { data: m.data, id: m.id };
}
