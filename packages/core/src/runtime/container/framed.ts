import { randomUUID } from "node:crypto";
import { secretValues } from "../../internal/secrets.js";
import type { Duplex } from "node:stream";
import type { ExecContext } from "../../context/exec-context.js";
import { agentResult, type AgentInput, type AgentResult } from "../../types/agent.js";
import {
  FrameDecoder,
  encodeFrame,
  PROTOCOL_VERSION,
  WorkerFrameSchema,
  type WorkerFrame,
} from "../protocol/index.js";
import { WorkerSpans } from "../protocol/worker-spans.js";
import { errorResult, messageOf, thrownResult } from "../results.js";
import type { AgentRuntime } from "../types.js";
import { Demuxer, exitState, STDERR, STDOUT, type Container } from "./docker.js";
import type { HandlerSpec } from "./spec.js";
import { STDERR_TAIL_BYTES, type ContainerHost } from "./stdio.js";
import { TailBuffer, withStderr } from "../subprocess/output.js";

/** How long to wait for the engine to record the exit of a container whose stream ended. */
const EXIT_WAIT_MS = 2000;
/** Room for the frame envelope around a result of `maxOutputBytes`. */
const FRAME_OVERHEAD_BYTES = 64 * 1024;

interface Invocation {
  readonly id: string;
  readonly scoped: ExecContext;
  readonly resolve: (result: AgentResult) => void;
  /** Stream pushes, chained so that chunks reach the sink in order and before the result. */
  pushing: Promise<void>;
  /** The message of the first failed push; nothing is pushed after it. */
  sinkError: string | null;
  /** The agent's spans; made on the first `span` frame. */
  spans: WorkerSpans | null;
}

/**
 * One container running a framed-protocol worker (the Nerva agent), attached over Docker's
 * multiplexed stdin/stdout. Serves one invocation at a time. A protocol violation, an exit or a
 * kill marks it dead for good; the pool then replaces it.
 */
export class FramedConnection {
  readonly container: Container;
  readonly #host: ContainerHost;
  readonly #spec: HandlerSpec;
  readonly #socket: Duplex;
  readonly #stderr: TailBuffer;
  /** The values of the container's configured env, masked wherever its own text is quoted. */
  readonly #secrets: readonly string[];
  readonly #decoder: FrameDecoder<WorkerFrame>;
  readonly #onDead: (conn: FramedConnection) => void;
  #ready: { resolve: () => void; reject: (err: Error) => void } | null = null;
  #current: Invocation | null = null;
  #dead: string | null = null;
  /** Invocations served, for tests and stats. */
  served = 0;

  private constructor(
    host: ContainerHost,
    spec: HandlerSpec,
    container: Container,
    socket: Duplex,
    onDead: (conn: FramedConnection) => void,
  ) {
    this.#host = host;
    this.#spec = spec;
    // The values the app configured in the container's env are masked wherever stderr is quoted.
    this.#secrets = secretValues(spec.options.env);
    this.#stderr = new TailBuffer(STDERR_TAIL_BYTES, this.#secrets);
    this.container = container;
    this.#socket = socket;
    this.#onDead = onDead;
    this.#decoder = new FrameDecoder({
      schema: WorkerFrameSchema,
      maxFrameBytes: host.maxOutputBytes + FRAME_OVERHEAD_BYTES,
      onFrame: (frame) => this.#onFrame(frame),
      onError: (err) => this.#fail(`sent a bad frame: ${err.message}`),
    });
    const demux = new Demuxer((stream, payload) => {
      if (stream === STDOUT) this.#decoder.push(payload);
      else if (stream === STDERR) this.#stderr.push(payload);
    });
    socket.on("data", (chunk: Buffer) => demux.push(chunk));
    socket.once("end", () => {
      // A frame cut off by the end of the stream is a protocol error (reported before the exit).
      this.#decoder.end();
      this.#exited();
    });
    socket.once("close", () => this.#exited());
    socket.on("error", () => this.#exited());
  }

  /**
   * Attaches to a created container, starts it and waits for the worker's `ready` frame.
   * Rejects (after discarding the container) if the worker does not come up in `startMs`.
   */
  static async open(
    host: ContainerHost,
    spec: HandlerSpec,
    container: Container,
    startMs: number,
    onDead: (conn: FramedConnection) => void = () => {},
  ): Promise<FramedConnection> {
    const socket = (await container.attach({
      stream: true,
      stdin: true,
      stdout: true,
      stderr: true,
      hijack: true,
    })) as Duplex;
    const conn = new FramedConnection(host, spec, container, socket, onDead);
    const ready = new Promise<void>((resolve, reject) => (conn.#ready = { resolve, reject }));
    let timer: ReturnType<typeof setTimeout> | undefined;
    try {
      await container.start();
      await Promise.race([
        ready,
        new Promise<never>((_, reject) => {
          timer = setTimeout(
            () => reject(new Error(`no "ready" frame within ${startMs} ms`)),
            startMs,
          );
        }),
      ]);
    } catch (err) {
      void conn.kill(`did not start: ${messageOf(err)}`);
      throw new Error(
        `The container of handler "${spec.name}" did not start a Nerva agent: ${messageOf(err)}${conn.#stderrNote()}`,
        { cause: err },
      );
    } finally {
      clearTimeout(timer);
    }
    return conn;
  }

  /** False once the worker died, broke the protocol or was killed. */
  get alive(): boolean {
    return this.#dead === null;
  }

  get busy(): boolean {
    return this.#current !== null;
  }

  /**
   * Runs one invocation. Chunks go to `scoped.stream` in order, usage is added to `scoped` as it
   * is reported, delegations are served by `runtime`. Resolves with the result or an ERROR saying
   * why the worker failed; never rejects.
   */
  run(input: AgentInput, scoped: ExecContext, runtime: AgentRuntime): Promise<AgentResult> {
    if (this.#dead !== null) return Promise.resolve(this.#deadResult(this.#deadMessage()));
    if (this.#current !== null) throw new Error("FramedConnection.run: already busy");
    return new Promise<AgentResult>((resolve) => {
      const id = randomUUID();
      this.#current = {
        id,
        scoped,
        resolve,
        pushing: Promise.resolve(),
        spans: null,
        sinkError: null,
      };
      this.#runtime = runtime;
      this.served++;
      this.#write(
        encodeFrame({
          type: "invoke",
          id,
          handler: this.#spec.name,
          module: this.#spec.options.module ?? null,
          input: {
            ...input,
            args: { ...input.args },
            tools: [...input.tools],
            history: [...input.history],
          },
          context: scoped.toWire(),
          stream: scoped.stream !== null,
        }),
      );
    });
  }

  #runtime: AgentRuntime | null = null;

  /** SIGKILLs and removes the container (through the host, which tracks the cleanup). */
  kill(reason: string): Promise<void> {
    this.#fail(reason);
    return this.#host.discard(this.container);
  }

  /** Closes stdin: the agent finishes and exits by itself. */
  end(): void {
    this.#socket.end();
  }

  /** The invocation's reported spans and events, made on the first report. */
  #reports(current: Invocation): WorkerSpans {
    return (current.spans ??= new WorkerSpans(current.scoped, this.#spec.name));
  }

  #write(line: string): void {
    if (this.#dead === null) this.#socket.write(line);
  }

  #onFrame(frame: WorkerFrame): void {
    if (frame.type === "ready") {
      if (frame.protocol !== PROTOCOL_VERSION) {
        this.#fail(`speaks protocol ${frame.protocol}, this host speaks ${PROTOCOL_VERSION}`);
        return;
      }
      this.#ready?.resolve();
      this.#ready = null;
      return;
    }
    if (frame.type === "error") {
      this.#fail(`reported a protocol error: ${frame.message}`);
      return;
    }
    const current = this.#current;
    if (current === null || (frame.id !== undefined && frame.id !== current.id)) {
      this.#fail(`sent a "${frame.type}" frame for no running invocation`);
      return;
    }
    switch (frame.type) {
      case "chunk": {
        const sink = current.scoped.stream;
        if (sink !== null && current.scoped.endReason === null && current.sinkError === null) {
          current.pushing = current.pushing
            .then(() => (current.sinkError === null ? sink.push(frame.text) : undefined))
            .catch((err: unknown) => {
              if (current.sinkError !== null) return;
              // A sink that fails stops the handler, as in every runtime: the container is
              // killed, the call ends with the sink's error, and nothing more is pushed.
              current.sinkError = messageOf(err);
              if (this.#current === current) {
                this.#fail(`was stopped: the stream sink failed on a chunk (${current.sinkError})`);
              }
            });
        }
        return;
      }
      case "usage":
        // Added at once: usage spent before a timeout is still charged.
        current.scoped.recordTokens({
          promptTokens: frame.prompt_tokens,
          completionTokens: frame.completion_tokens,
          totalTokens: frame.total_tokens ?? frame.prompt_tokens + frame.completion_tokens,
          costUsd: frame.cost_usd,
          cachedInputTokens: frame.cached_input_tokens,
          reasoningTokens: frame.reasoning_tokens,
        });
        return;
      case "span":
        this.#reports(current).add(frame.span);
        return;
      case "event":
        this.#reports(current).addEvent(frame.event);
        return;
      case "delegate":
        void this.#delegate(current, frame.call_id, frame.handler, frame.input);
        return;
      case "result": {
        this.#current = null;
        if (frame.spans_dropped > 0 || frame.events_dropped > 0) {
          this.#reports(current).addDropped(frame.spans_dropped, frame.events_dropped);
        }
        current.spans?.finish();
        // `handler` in a result frame is ignored: the host knows which handler it invoked.
        const { handler: _ignored, ...fields } = frame.result;
        const result = withStderr(agentResult(this.#spec.name, fields), "", this.#secrets);
        void current.pushing.then(() =>
          current.resolve(
            current.sinkError === null
              ? result
              : errorResult(
                  this.#spec.name,
                  `The stream sink failed on a chunk of "${this.#spec.name}": ${current.sinkError}`,
                ),
          ),
        );
        return;
      }
    }
  }

  async #delegate(
    current: Invocation,
    callId: string,
    handler: string,
    input: AgentInput,
  ): Promise<void> {
    let result: AgentResult;
    try {
      result = await (this.#runtime as AgentRuntime).delegate(handler, input, current.scoped);
    } catch (err) {
      result = thrownResult(handler, err);
    }
    if (this.#current !== current) return;
    this.#write(encodeFrame({ type: "delegate_result", id: current.id, call_id: callId, result }));
  }

  #exited(): void {
    if (this.#dead !== null) return;
    this.#fail("exited", true);
  }

  /**
   * Marks the connection dead and fails the running invocation. `exited`: the container went
   * away by itself, so the engine is asked why (memory limit, exit code); otherwise the reason
   * given (a protocol error, a kill) is the one reported.
   */
  #fail(reason: string, exited = false): void {
    if (this.#dead !== null) return;
    this.#dead = reason;
    this.#socket.destroy();
    this.#ready?.reject(new Error(reason));
    this.#ready = null;
    const current = this.#current;
    this.#current = null;
    current?.spans?.finish();
    if (current !== null) void this.#failInvocation(current, exited);
    this.#onDead(this);
  }

  /** The container died mid-invocation: say why (memory limit, exit code), then resolve. */
  async #failInvocation(current: Invocation, exited: boolean): Promise<void> {
    let why = this.#deadMessage();
    if (exited && current.scoped.endReason === null) {
      try {
        // The stream can end a moment before the engine records the exit: wait for it (briefly).
        let timer: ReturnType<typeof setTimeout> | undefined;
        await Promise.race([
          this.container.wait({ condition: "not-running" }),
          new Promise((r) => (timer = setTimeout(r, EXIT_WAIT_MS))),
        ]).finally(() => clearTimeout(timer));
        const state = await exitState(this.container);
        if (state.oomKilled) {
          why = `Handler "${this.#spec.name}" exceeded its memory limit of ${this.#spec.options.memoryLimit}: the container was OOM-killed (exit code ${state.exitCode}).`;
        } else if (!state.running) {
          why = `The container of handler "${this.#spec.name}" exited with code ${state.exitCode} during the call.`;
        }
      } catch {
        // Already removed: the generic message stands.
      }
    }
    void this.#host.discard(this.container);
    current.resolve(this.#deadResult(why));
  }

  /** An ERROR result carrying the container's stderr tail, as every runtime attaches it. */
  #deadResult(message: string): AgentResult {
    return withStderr(errorResult(this.#spec.name, message), this.#stderr.text());
  }

  #deadMessage(): string {
    return `The container of handler "${this.#spec.name}" ${this.#dead ?? "is gone"}.`;
  }

  #stderrNote(): string {
    const tail = this.#stderr.text();
    return tail === "" ? "" : ` stderr: ${tail}`;
  }
}
