import type { ExecContext, StreamSink } from "../context/exec-context.js";
import type { OrchestratorResponse } from "../middleware/types.js";
import { AgentStatus } from "../types/status.js";
import { ChunkQueue } from "./chunk-queue.js";
import type { CallOptions, Wiring } from "./options.js";
import { runRequest } from "./run.js";
import type { OrchestratorStream } from "./types.js";

/**
 * `orchestrator.stream()`: the request runs in a fork whose stream sink formats each chunk and
 * feeds a queue the reader pulls from. Work starts on the first `next()` or when `response` is
 * read; a reader that stops reading cancels the request. A handler that does not stream yields
 * one final chunk (its formatted answer); a streamed answer that ends in a failure gets a last
 * chunk naming it.
 */
export function streamRequest(
  w: Wiring,
  message: string,
  ctx: ExecContext,
  call: CallOptions,
): OrchestratorStream {
  const channel = call.channel;
  const responder = w.responder;
  let response: Promise<OrchestratorResponse> | null = null;
  let rctx: ExecContext | null = null;
  const start = (): Promise<OrchestratorResponse> => {
    if (response !== null) return response;
    const span = ctx.startSpan("handle", { message_length: message.length, stream: true });
    let pushed = false;
    const sink: StreamSink = {
      push: (chunk) => {
        const out = responder.formatChunk(chunk, channel, fork);
        if (out === "") return;
        pushed = true;
        return queue.push(out);
      },
    };
    const fork = ctx.fork({ span, stream: sink });
    rctx = fork;
    response = runRequest(w, message, fork, span, call).then(
      (res) => {
        // The last chunks are buffered at once; the drain promise push() may return only paces a
        // producer that has more to send, and this one has finished (it never rejects).
        if (!pushed) {
          if (res.text !== "") void queue.push(res.text);
        } else {
          if (res.status !== AgentStatus.SUCCESS) {
            const note = responder.formatChunk(
              `\n[${res.status}] ${res.error ?? "the handler did not succeed"}`,
              channel,
              fork,
            );
            if (note !== "") void queue.push(note);
          }
          const tail = responder.endStream?.(channel, fork) ?? "";
          if (tail !== "") void queue.push(tail);
        }
        queue.end();
        fork.dispose();
        return res;
      },
      (err: unknown) => {
        queue.fail(err);
        fork.dispose();
        throw err;
      },
    );
    // Read through `response` or the iterator; never an unhandled rejection when neither is.
    response.catch(() => undefined);
    return response;
  };
  const queue = new ChunkQueue(
    () => void start(),
    () => rctx?.cancel("the stream consumer stopped reading"),
  );
  return {
    [Symbol.asyncIterator]: () => queue,
    get response() {
      return start();
    },
  };
}
