import type { ExecContext } from "../../context/exec-context.js";
import type { AgentInput, AgentResult } from "../../types/agent.js";
import type { HostFrameInput, WorkerFrame } from "../protocol/frames.js";
import { WorkerSpans } from "../protocol/worker-spans.js";
import { messageOf, thrownResult } from "../results.js";

/** What an {@link InvocationSession} needs from its runtime. */
export interface SessionOptions {
  readonly handler: string;
  /** The handler's context (the fork made by the guard). */
  readonly scoped: ExecContext;
  /** Id put in frames sent back (the invocation id). */
  readonly id: string;
  /** Runs a delegation requested by the handler, with `scoped` as the parent context. */
  readonly delegate: (handler: string, input: AgentInput) => Promise<AgentResult>;
  /** Sends a frame to the handler's process. */
  readonly send: (frame: HostFrameInput) => void;
  /** Ends the invocation with an ERROR (e.g. the stream sink failed). */
  readonly fail: (message: string) => void;
  /** Called with +1 when a delegation starts and -1 when it ends (the process waits meanwhile). */
  readonly onBlocked?: (delta: 1 | -1) => void;
}

/**
 * The host side of one invocation's `chunk`, `usage`, `span` and `delegate` frames, shared by
 * pooled workers and executables. Chunks go to `ctx.stream` strictly in order (each push awaited before
 * the next, so a sink's backpressure holds); a delegation starts only after the chunks sent
 * before it have been pushed.
 */
export class InvocationSession {
  readonly #o: SessionOptions;
  #chain: Promise<void> = Promise.resolve();
  #closed = false;
  #sinkFailure: string | null = null;
  /** The worker's spans; made on the first `span` frame (most invocations send none). */
  #spans: WorkerSpans | null = null;
  /** Everything streamed so far (the output of an executable that prints nothing else). */
  streamed = "";
  chunks = 0;

  constructor(options: SessionOptions) {
    this.#o = options;
  }

  /**
   * Handles a `chunk`, `usage`, `span`, `event` or `delegate` frame; returns false for any other
   * type (a `result` frame's `spans_dropped` and `events_dropped` are counted, and false returned:
   * the caller ends the call).
   */
  /** The invocation's reported spans and events, made on the first report. */
  #reports(): WorkerSpans {
    return (this.#spans ??= new WorkerSpans(this.#o.scoped, this.#o.handler));
  }

  handle(frame: WorkerFrame): boolean {
    const o = this.#o;
    switch (frame.type) {
      case "chunk": {
        this.streamed += frame.text;
        this.chunks++;
        const sink = o.scoped.stream;
        if (sink !== null && this.#sinkFailure === null) {
          const text = frame.text;
          // After a failed push nothing more goes to the sink (the chain stays rejected).
          this.#chain = this.#chain.then(() => sink.push(text));
          this.#chain.catch((err: unknown) => {
            if (this.#sinkFailure !== null) return;
            this.#sinkFailure = `The stream sink failed on a chunk of "${o.handler}": ${messageOf(err)}`;
            o.fail(this.#sinkFailure);
          });
        }
        return true;
      }
      case "usage":
        try {
          o.scoped.recordTokens({
            promptTokens: frame.prompt_tokens,
            completionTokens: frame.completion_tokens,
            totalTokens: frame.total_tokens ?? frame.prompt_tokens + frame.completion_tokens,
            costUsd: frame.cost_usd,
            cachedInputTokens: frame.cached_input_tokens,
            reasoningTokens: frame.reasoning_tokens,
          });
        } catch (err) {
          o.fail(`Handler "${o.handler}" reported invalid usage: ${messageOf(err)}`);
        }
        return true;
      case "span":
        this.#reports().add(frame.span);
        return true;
      case "event":
        this.#reports().addEvent(frame.event);
        return true;
      case "result":
        if (frame.spans_dropped > 0 || frame.events_dropped > 0) {
          this.#reports().addDropped(frame.spans_dropped, frame.events_dropped);
        }
        return false;
      case "delegate": {
        const { call_id: callId, handler, input } = frame;
        o.onBlocked?.(1);
        const before = this.#chain.catch(() => undefined);
        void before
          .then(() => o.delegate(handler, input))
          .catch((err: unknown) => thrownResult(handler, err))
          .then((result) => {
            o.onBlocked?.(-1);
            if (!this.#closed) {
              o.send({ type: "delegate_result", id: o.id, call_id: callId, result });
            }
          });
        return true;
      }
      default:
        return false;
    }
  }

  /**
   * Why the sink failed, once a push threw or rejected: the call fails with it even when the
   * handler had already finished (the failure can come after its result).
   */
  get sinkFailure(): string | null {
    return this.#sinkFailure;
  }

  /** Resolves when every chunk received so far has been pushed to the sink. */
  drain(): Promise<void> {
    return this.#chain.catch(() => undefined);
  }

  /**
   * Stops answering delegations (the process is gone or the invocation is over), and settles
   * the worker's spans: those still waiting for a parent nest under the invocation's span.
   */
  close(): void {
    this.#closed = true;
    this.#spans?.finish();
  }
}
