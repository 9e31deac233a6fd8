import { pathToFileURL } from "node:url";
import { ExecContext, type StreamSink } from "../../context/exec-context.js";
import { ErrorCode, NervaError } from "../../errors.js";
import { agentResult, type AgentInputInit, type AgentResult } from "../../types/agent.js";
import type { TokenUsage } from "../../types/usage.js";
import type { TraceSink } from "../../tracing/sink.js";
import { checkInvokeArgs } from "../guard.js";
import { runFunction } from "../handler-call.js";
import { FrameDecoder, encodeFrame } from "../protocol/codec.js";
import { eventFrame, spanFrame } from "../protocol/span-frame.js";
import { WORKER_SPAN_LIMITS } from "../protocol/worker-spans.js";
import {
  HostFrameSchema,
  PROTOCOL_VERSION,
  type HostFrame,
  type AgentInputWire,
  type InvokeFrame,
  type WorkerFrameInput,
} from "../protocol/frames.js";
import { messageOf, thrownResult } from "../results.js";
import type { AgentHandler, AgentRuntime } from "../types.js";

/** Largest frame a worker accepts from its host (an invoke carries the input and the context). */
const WORKER_MAX_FRAME_BYTES = 64 * 1024 * 1024;

/** Options of {@link serveWorker}. */
export interface ServeWorkerOptions {
  /** Where host frames arrive. */
  readonly input: NodeJS.ReadableStream;
  /** Where worker frames go. */
  readonly output: { write(text: string): unknown };
  /**
   * Finds the handler for an `invoke` frame. Default: `import(frame.module)` and take its
   * default export, or its export named `handler`.
   */
  readonly resolveHandler?: (frame: InvokeFrame) => Promise<AgentHandler>;
  /** Called once when the host's stream ends or a `shutdown` frame arrives. */
  readonly onEnd?: () => void;
}

interface Invocation {
  readonly id: string;
  readonly ctx: ExecContext;
  readonly calls: Map<string, (result: AgentResult) => void>;
  reported: TokenUsage;
  /**
   * Cached-input and reasoning tokens not yet in a `usage` frame: those of spans that ended, and
   * those recorded on the invocation's own context (`ctx.tokenUsage` has neither).
   */
  cached: number;
  reasoning: number;
  nextCall: number;
}

/** The `span` and `event` frames of one invocation: sent while it runs, up to the host's limits. */
interface SpanReport {
  sent: number;
  dropped: number;
  eventsSent: number;
  eventsDropped: number;
  /** False once the result is sent: a span ending later has no invocation to join. */
  open: boolean;
}

const moduleCache = new Map<string, Promise<AgentHandler>>();

/**
 * Imports a handler module: its default export, or its export named `handler`, must be a function.
 * Successful imports are cached for the life of the worker (recycle the worker to reload).
 */
export function importHandler(file: string): Promise<AgentHandler> {
  const cached = moduleCache.get(file);
  if (cached !== undefined) return cached;
  const loading = import(pathToFileURL(file).href).then(
    (mod: Record<string, unknown>) => {
      const fn = typeof mod["default"] === "function" ? mod["default"] : mod["handler"];
      if (typeof fn !== "function") {
        throw new NervaError(
          ErrorCode.INVALID_INPUT,
          `Module ${file} exports no handler: use "export default async function (input, ctx, runtime) { ... }" or "export async function handler(input, ctx, runtime) { ... }".`,
        );
      }
      return fn as AgentHandler;
    },
    (err: unknown) => {
      moduleCache.delete(file);
      throw new NervaError(
        ErrorCode.INVALID_INPUT,
        `Could not load handler module ${file}: ${messageOf(err)}`,
        { cause: err },
      );
    },
  );
  moduleCache.set(file, loading);
  return loading;
}

function defaultResolve(frame: InvokeFrame): Promise<AgentHandler> {
  if (frame.module === null) {
    return Promise.reject(
      new NervaError(
        ErrorCode.INVALID_INPUT,
        `Invoke frame for "${frame.handler}" has no module: the Node worker needs the path of the handler's file.`,
      ),
    );
  }
  return importHandler(frame.module);
}

function notAvailable(method: string): NervaError {
  return new NervaError(
    ErrorCode.INVALID_INPUT,
    `runtime.${method}() is not available inside a subprocess worker; use runtime.delegate(handler, input, ctx), which the host runs with depth, cycle and permission checks.`,
  );
}

/**
 * The worker side of the framed protocol (see docs/protocol.md): answers `ready`, runs `invoke`
 * frames (several may run at once, keyed by id), streams `chunk` frames, reports token usage as
 * `usage` deltas, forwards `runtime.delegate()` to the host, aborts a handler's context on
 * `cancel`. Used by the Node worker of `SubprocessRuntime` (channel on fd 3) and reusable as the
 * agent of a container (channel on stdin/stdout).
 *
 * @example
 * import net from "node:net";
 * const channel = new net.Socket({ fd: 3, readable: true, writable: true });
 * serveWorker({ input: channel, output: channel, onEnd: () => process.exit(0) });
 */
export function serveWorker(options: ServeWorkerOptions): void {
  const resolve = options.resolveHandler ?? defaultResolve;
  const running = new Map<string, Invocation>();
  let ended = false;
  const send = (frame: WorkerFrameInput): void => {
    if (!ended) options.output.write(encodeFrame(frame));
  };
  const end = (): void => {
    if (ended) return;
    ended = true;
    for (const inv of running.values()) inv.ctx.cancel("the host closed the channel");
    options.onEnd?.();
  };

  const decoder = new FrameDecoder<HostFrame>({
    schema: HostFrameSchema,
    maxFrameBytes: WORKER_MAX_FRAME_BYTES,
    onFrame: (frame) => {
      switch (frame.type) {
        case "invoke":
          if (running.has(frame.id)) {
            send({
              type: "error",
              id: frame.id,
              message: `Invocation ${frame.id} is already running.`,
            });
            return;
          }
          void run(frame);
          return;
        case "cancel":
          // A cancel that crossed the result on the wire names nothing: nothing to do.
          running.get(frame.id)?.ctx.cancel(frame.reason);
          return;
        case "delegate_result": {
          const call = running.get(frame.id)?.calls.get(frame.call_id);
          if (call !== undefined) call(frame.result as AgentResult);
          return;
        }
        case "shutdown":
          end();
          return;
      }
    },
    onError: (err) => send({ type: "error", message: err.message }),
  });
  options.input.on("data", (bytes: Buffer | string) => decoder.push(bytes));
  options.input.on("end", () => {
    decoder.end();
    end();
  });
  options.input.on("error", end);

  const flushUsage = (inv: Invocation): void => {
    const now = inv.ctx.tokenUsage;
    const before = inv.reported;
    if (
      now.promptTokens === before.promptTokens &&
      now.completionTokens === before.completionTokens &&
      now.totalTokens === before.totalTokens &&
      now.costUsd === before.costUsd &&
      inv.cached === 0 &&
      inv.reasoning === 0
    ) {
      return;
    }
    inv.reported = now;
    const { cached, reasoning } = inv;
    inv.cached = inv.reasoning = 0;
    send({
      type: "usage",
      id: inv.id,
      prompt_tokens: now.promptTokens - before.promptTokens,
      completion_tokens: now.completionTokens - before.completionTokens,
      total_tokens: now.totalTokens - before.totalTokens,
      cost_usd: Math.max(0, now.costUsd - before.costUsd),
      ...(cached === 0 ? {} : { cached_input_tokens: cached }),
      ...(reasoning === 0 ? {} : { reasoning_tokens: reasoning }),
    });
  };

  async function run(frame: InvokeFrame): Promise<void> {
    const id = frame.id;
    let inv: Invocation | undefined;
    const sink: StreamSink | null = frame.stream
      ? {
          push: (text: string) => {
            if (inv !== undefined) flushUsage(inv);
            send({ type: "chunk", id, text });
          },
        }
      : null;
    // Each span of the handler is sent as it ends, up to the host's limit (the rest are counted
    // in the result), after a `usage` frame with what it recorded: the host places a span's usage
    // only once it has been charged.
    const spans: SpanReport = { sent: 0, dropped: 0, eventsSent: 0, eventsDropped: 0, open: true };
    const traceSink: TraceSink = {
      onSpanEnd: (span) => {
        if (!spans.open || inv === undefined) return;
        const own = span.usage;
        inv.cached += own.cachedInputTokens;
        inv.reasoning += own.reasoningTokens;
        flushUsage(inv);
        if (spans.sent >= WORKER_SPAN_LIMITS.maxSpans) {
          spans.dropped++;
          return;
        }
        spans.sent++;
        send(spanFrame(span, id));
      },
      // Events go as they are recorded (before the span they happen in ends), up to the limit.
      onEvent: (event) => {
        if (!spans.open) return;
        if (spans.eventsSent >= WORKER_SPAN_LIMITS.maxEvents) {
          spans.eventsDropped++;
          return;
        }
        spans.eventsSent++;
        send(eventFrame(event, id));
      },
    };
    let result: AgentResult;
    try {
      const ctx = ExecContext.fromWire(frame.context, { stream: sink, traceSink });
      inv = {
        id,
        ctx,
        calls: new Map(),
        reported: ctx.tokenUsage,
        cached: 0,
        reasoning: 0,
        nextCall: 0,
      };
      const current = inv;
      running.set(id, current);
      // Report usage the moment it is recorded, so a handler killed later is still charged.
      const record = ctx.recordTokens.bind(ctx);
      ctx.recordTokens = (delta) => {
        record(delta);
        // This context's span is the host's: no span of the worker keeps these counts.
        current.cached += delta.cachedInputTokens ?? 0;
        current.reasoning += delta.reasoningTokens ?? 0;
        flushUsage(current);
      };
      const fn = await resolve(frame);
      result = await execute(frame.handler, fn, frame, current);
    } catch (err) {
      result = thrownResult(frame.handler, err);
    }
    if (inv !== undefined) {
      flushUsage(inv);
      running.delete(id);
      inv.ctx.dispose();
    }
    spans.open = false;
    const dropped = {
      ...(spans.dropped === 0 ? {} : { spans_dropped: spans.dropped }),
      ...(spans.eventsDropped === 0 ? {} : { events_dropped: spans.eventsDropped }),
    };
    try {
      send({
        type: "result",
        id,
        result: {
          status: result.status,
          output: result.output,
          data: result.data as Record<string, never>,
          error: result.error,
        },
        ...dropped,
      });
    } catch (err) {
      // Not serialisable (a BigInt, say): the host still gets a result, never silence.
      send({
        type: "result",
        id,
        result: {
          status: "error",
          error: `Handler "${frame.handler}" returned a result that cannot be sent to the host: ${messageOf(err)}`,
        },
        ...dropped,
      });
    }
  }

  async function execute(
    name: string,
    fn: AgentHandler,
    frame: InvokeFrame,
    inv: Invocation,
  ): Promise<AgentResult> {
    const runtime: AgentRuntime = {
      invoke: () => Promise.reject(notAvailable("invoke")),
      invokeChain: () => Promise.reject(notAvailable("invokeChain")),
      handlerNames: () => {
        throw notAvailable("handlerNames");
      },
      close: () => Promise.resolve(),
      delegate: (handler: string, input: AgentInputInit, parentCtx: ExecContext) => {
        try {
          const checked = checkInvokeArgs(handler, input, parentCtx ?? inv.ctx);
          const callId = String(++inv.nextCall);
          flushUsage(inv);
          return new Promise<AgentResult>((done) => {
            inv.calls.set(callId, (r) => {
              inv.calls.delete(callId);
              done(agentResult(r.handler, r));
            });
            send({
              type: "delegate",
              id: inv.id,
              call_id: callId,
              handler,
              input: checked as AgentInputWire,
            });
          });
        } catch (err) {
          return Promise.reject(err);
        }
      },
    };
    return runFunction(name, fn, frame.input, inv.ctx, runtime);
  }

  send({
    type: "ready",
    protocol: PROTOCOL_VERSION,
    pid: process.pid,
    runtime: `node ${process.version}`,
  });
}
