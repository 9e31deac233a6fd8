import type { ChildProcess } from "node:child_process";
import type { Readable, Writable } from "node:stream";
import { agentResult, type AgentResult } from "../../types/agent.js";
import { FrameDecoder, encodeFrame } from "../protocol/codec.js";
import {
  PROTOCOL_VERSION,
  WorkerFrameSchema,
  type AgentInputWire,
  type HostFrameInput,
  type WorkerFrame,
} from "../protocol/frames.js";
import { errorResult } from "../results.js";
import { AgentStatus } from "../../types/status.js";
import { STATUS_FD, parseInitReport } from "./init.js";
import { TailBuffer, killGroup, quoteTail, withStderr } from "./output.js";
import { InvocationSession } from "./session.js";
import { setChildRef } from "./spare.js";
import { workerEntry } from "./worker-entry-file.js";
import {
  countOutput,
  deathMessage,
  workerExit,
  type RunningJob,
  type WorkerExit,
  type WorkerJob,
} from "./worker-job.js";
import {
  findWorkerTree,
  hasLeftProcesses,
  spawnWorker,
  type WorkerSettings,
  type WorkerTree,
} from "./worker-spawn.js";

export { workerEntry };
export type { WorkerJob, WorkerSettings };

const FRAME_SLACK = 64 * 1024;

type State = "starting" | "idle" | "busy" | "dead";

/**
 * One long-lived Node worker: its own process group (so a kill takes anything it started), the
 * frame channel on fd 3, stdout and stderr drained and counted against `maxOutputBytes`. Runs one
 * job at a time. Any crash, protocol error or output flood ends the job with an ERROR that says
 * which, and the worker is dead for good (the pool replaces it).
 */
export class WorkerProcess {
  readonly pid: number | undefined;
  /** Resolves when the worker sent `ready`; rejects if it died or took too long. */
  readonly ready: Promise<void>;
  /** Resolves once the process has exited and been reaped. */
  readonly exited: Promise<void>;
  invocations = 0;
  #state: State = "starting";
  readonly #settings: WorkerSettings;
  readonly #child: ChildProcess;
  readonly #channel: Readable & Writable;
  #current: RunningJob | null = null;
  /** Set once a kill was sent: later frames are ignored, the job settles when the process closes. */
  #doomed = false;
  #idleBytes = 0;
  #exit: WorkerExit | null = null;
  #readyResolve!: () => void;
  #readyReject!: (err: Error) => void;
  #startTimer: ReturnType<typeof setTimeout> | null = null;
  readonly #startupErr: TailBuffer;
  /** What the namespace's init reported on its status fd (nothing without an init). */
  #initReport = "";
  /**
   * Host pids of the process running the worker code and of its namespace's init (null without
   * one), found when the worker became ready (null until then, or if /proc cannot tell).
   */
  #tree: WorkerTree | null = null;
  /** Called when the worker dies (whatever the reason). */
  onDeath: (() => void) | null = null;

  constructor(settings: WorkerSettings) {
    this.#settings = settings;
    this.#startupErr = new TailBuffer(2048, settings.secrets);
    this.ready = new Promise<void>((resolve, reject) => {
      this.#readyResolve = resolve;
      this.#readyReject = reject;
    });
    this.ready.catch(() => undefined);
    this.#child = spawnWorker(settings);
    this.pid = this.#child.pid;
    this.#channel = this.#child.stdio[3] as Readable & Writable;
    this.exited = new Promise<void>((resolve) => this.#child.once("exit", () => resolve()));
    this.#startTimer = setTimeout(() => {
      this.#startTimer = null;
      this.#die(`did not start within ${settings.startupTimeoutMs} ms`);
    }, settings.startupTimeoutMs);
    this.#startTimer.unref();
    this.#wire();
  }

  get state(): State {
    return this.#state;
  }

  #wire(): void {
    const child = this.#child;
    const s = this.#settings;
    child.on("error", (err) => this.#die(`could not be started: ${err.message}`));
    (child.stdio[1] as Readable).on("data", (bytes: Buffer) => this.#output("stdout", bytes));
    (child.stdio[2] as Readable).on("data", (bytes: Buffer) => this.#output("stderr", bytes));
    const decoder = new FrameDecoder({
      schema: WorkerFrameSchema,
      maxFrameBytes: s.maxOutputBytes + FRAME_SLACK,
      onFrame: (frame, bytes) => this.#frame(frame, bytes),
      onError: (err) => this.#protocolError(err.message),
    });
    this.#channel.on("data", (bytes: Buffer) => decoder.push(bytes));
    // A frame cut off by the end of the channel is a protocol error, not a frame to forget.
    this.#channel.on("end", () => decoder.end());
    this.#channel.on("error", () => undefined);
    const status = s.launcher.hasInit ? (child.stdio[STATUS_FD] as Readable) : null;
    status?.on("error", () => undefined);
    status?.setEncoding("latin1");
    status?.on("data", (text: string) => {
      if (this.#initReport.length < 64) this.#initReport += text;
    });
    child.on("exit", (code, signal) => {
      this.#exit = { code, signal };
      killGroup(this.pid);
      // Under an init, how the worker ended is known once its status fd is read (at close).
      if (this.#state === "starting" && status === null) this.#die("exited during start-up");
    });
    child.on("close", () => this.#closed());
  }

  #output(stream: "stdout" | "stderr", bytes: Buffer): void {
    const cur = this.#current;
    if (cur === null) {
      if (stream === "stderr" && this.#state === "starting") this.#startupErr.push(bytes);
      this.#idleBytes += bytes.length;
      if (this.#idleBytes > this.#settings.maxOutputBytes) {
        this.#die(`wrote more than ${this.#settings.maxOutputBytes} bytes while idle`);
      }
      return;
    }
    const failure = countOutput(cur, stream, bytes, this.#settings);
    if (failure !== null) this.#failJob(failure);
  }

  #frame(frame: WorkerFrame, bytes: number): void {
    if (this.#doomed) return;
    if (frame.type === "ready") {
      if (this.#state !== "starting") {
        this.#protocolError("sent a second ready frame");
      } else if (frame.protocol !== PROTOCOL_VERSION) {
        this.#die(`speaks protocol ${frame.protocol}, not ${PROTOCOL_VERSION}`);
      } else {
        if (this.#startTimer !== null) clearTimeout(this.#startTimer);
        this.#startTimer = null;
        this.#tree = findWorkerTree(this.pid, this.#settings.launcher.hasInit);
        this.#state = "idle";
        this.#readyResolve();
      }
      return;
    }
    const cur = this.#current;
    if (cur === null || (frame.id !== undefined && frame.id !== cur.job.id)) {
      this.#protocolError(`sent a ${frame.type} frame for no running invocation`);
      return;
    }
    cur.channelBytes += bytes;
    if (cur.channelBytes > this.#settings.maxOutputBytes) {
      this.#failJob(
        `Output limit exceeded: handler "${cur.job.handler}" sent more than ${this.#settings.maxOutputBytes} bytes of chunks and results (maxOutputBytes); its worker was killed.`,
      );
      return;
    }
    if (cur.session.handle(frame)) return;
    if (frame.type === "error") {
      this.#protocolError(`reported: ${frame.message}`);
    } else if (frame.type === "result") {
      this.#complete(agentResult(cur.job.handler, frame.result));
    }
  }

  #protocolError(message: string): void {
    const cur = this.#current;
    if (cur !== null) {
      this.#failJob(`Protocol error from the worker of "${cur.job.handler}": ${message}`);
    } else {
      this.#die(`protocol error: ${message}`);
    }
  }

  /** Ends the current job with `message` and kills the worker; the result waits for its stderr. */
  #failJob(message: string): void {
    const cur = this.#current;
    if (cur === null) return;
    if (cur.failure === null) cur.failure = message;
    this.#kill();
  }

  /** A job ended normally: resolve after its chunks are pushed, and become idle again. */
  #complete(result: AgentResult): void {
    const cur = this.#current;
    if (cur === null) return;
    this.#release(cur);
    if (cur.stopping) {
      // Stopped within the grace period after a cancel frame: the worker is fine to reuse,
      // unless the handler left processes behind. Those must end with the cancel, and only a
      // kill of the worker (and its namespace) reaches all of them.
      if (hasLeftProcesses(this.#tree)) {
        this.#current = null;
        this.#doomed = true;
        this.#die("left processes running after a cancel");
        cur.resolve(result);
        return;
      }
      this.#state = "idle";
      this.#current = null;
      cur.resolve(result);
      return;
    }
    this.#state = "idle";
    this.#current = null;
    void cur.session.drain().then(() => {
      // A sink that failed on the last chunks fails the call; the worker itself is fine.
      const failure = cur.session.sinkFailure;
      const final =
        failure !== null && result.status === AgentStatus.SUCCESS
          ? errorResult(cur.job.handler, failure)
          : result;
      cur.resolve(withStderr(final, cur.stderr.text(), this.#settings.secrets));
    });
  }

  #release(cur: RunningJob): void {
    cur.session.close();
    cur.job.scoped.signal.removeEventListener("abort", cur.onAbort);
    if (cur.graceTimer !== null) clearTimeout(cur.graceTimer);
  }

  /** Runs `job`; resolves (never rejects) with its result. The worker must be idle. */
  run(job: WorkerJob): Promise<AgentResult> {
    if (this.#state !== "idle") {
      return Promise.resolve(
        errorResult(job.handler, `Internal error: worker ${this.pid} is ${this.#state}, not idle.`),
      );
    }
    this.#state = "busy";
    this.invocations++;
    this.#idleBytes = 0;
    const stderr = new TailBuffer(this.#settings.stderrTailBytes, this.#settings.secrets);
    job.observe({ ...(this.pid === undefined ? {} : { pid: this.pid }), stderr });
    return new Promise<AgentResult>((resolve) => {
      const cur: RunningJob = {
        job,
        stderr,
        resolve,
        outBytes: 0,
        errBytes: 0,
        channelBytes: 0,
        failure: null,
        outOfMemory: false,
        stopping: false,
        graceTimer: null,
        onAbort: () => this.#abort(cur),
        session: new InvocationSession({
          handler: job.handler,
          scoped: job.scoped,
          id: job.id,
          delegate: job.delegate,
          send: (frame) => this.#send(frame),
          fail: (message) => this.#failJob(message),
          onBlocked: job.onBlocked,
        }),
      };
      const signal = job.scoped.signal;
      if (signal.aborted) {
        // Ended before anything was sent: the worker stays idle and clean.
        this.#state = "idle";
        this.invocations--;
        const why = job.scoped.endReason?.message ?? "cancelled";
        resolve(errorResult(job.handler, `Handler "${job.handler}" was stopped: ${why}`));
        return;
      }
      this.#current = cur;
      signal.addEventListener("abort", cur.onAbort, { once: true });
      this.#send({
        type: "invoke",
        id: job.id,
        handler: job.handler,
        module: job.module,
        input: job.input as AgentInputWire,
        context: job.scoped.toWire(),
        stream: job.scoped.stream !== null,
      });
    });
  }

  #abort(cur: RunningJob): void {
    if (this.#current !== cur || cur.stopping) return;
    cur.stopping = true;
    const reason = cur.job.scoped.endReason;
    cur.failure ??= `Handler "${cur.job.handler}" was stopped: ${reason?.message ?? "cancelled"}`;
    this.#send({ type: "cancel", id: cur.job.id, reason: reason?.message ?? "cancelled" });
    if (this.#settings.cancelGraceMs === 0) {
      this.#kill();
    } else {
      cur.graceTimer = setTimeout(() => this.#kill(), this.#settings.cancelGraceMs);
    }
  }

  #send(frame: HostFrameInput): void {
    if (this.#state !== "dead" && this.#channel.writable) this.#channel.write(encodeFrame(frame));
  }

  /** Asks an idle worker to exit, killing it if it has not within a second. */
  retire(): void {
    if (this.#state === "dead") return;
    this.#send({ type: "shutdown" });
    this.#state = "dead";
    this.#notifyDeath();
    const timer = setTimeout(() => this.#kill(), 1000);
    timer.unref();
    void this.exited.then(() => clearTimeout(timer));
  }

  /** SIGKILLs the worker's process group. */
  kill(): void {
    this.#kill();
  }

  #kill(): void {
    this.#doomed = true;
    // An idle worker was unref'd; whoever awaits `exited` (close()) needs the loop kept alive
    // until the exit arrives, which after SIGKILL is at once.
    if (this.#child.exitCode === null && this.#child.signalCode === null) this.setRef(true);
    killGroup(this.pid);
    if (this.pid === undefined) this.#die("has no pid");
  }

  /** While idle, the worker does not keep the host's event loop alive. */
  setRef(ref: boolean): void {
    setChildRef(this.#child, ref);
  }

  #die(why: string): void {
    if (this.#startTimer !== null) clearTimeout(this.#startTimer);
    this.#startTimer = null;
    if (this.#state === "starting") {
      const tail = this.#startupErr.text();
      this.#readyReject(
        new Error(
          `The Node worker (pid ${this.pid ?? "none"}) ${why}${tail === "" ? "" : ` — stderr: ${quoteTail(tail)}`}`,
        ),
      );
    }
    if (this.#state !== "dead") {
      this.#state = "dead";
      this.#notifyDeath();
    }
    killGroup(this.pid);
  }

  #notifyDeath(): void {
    const cb = this.onDeath;
    this.onDeath = null;
    cb?.();
  }

  /** The process and its stdio are closed: settle a job still running with the reason. */
  #closed(): void {
    // Under a namespace's init, how the worker itself ended is what the init reported.
    const report = parseInitReport(this.#initReport);
    const exit = workerExit(this.#exit, report);
    if (this.#state === "starting") {
      this.#die(
        report?.kind === "exec-error"
          ? `could not be started: ${this.#settings.nodePath} (${report.code})`
          : "exited during start-up",
      );
    }
    this.#die("exited");
    const cur = this.#current;
    if (cur === null) return;
    this.#current = null;
    this.#release(cur);
    const h = cur.job.handler;
    const tail = cur.stderr.text();
    const message = deathMessage(cur, exit, tail, this.#settings);
    void cur.session
      .drain()
      .then(() => cur.resolve(withStderr(errorResult(h, message), tail, this.#settings.secrets)));
  }
}
