import type { ExecContext } from "../../context/exec-context.js";
import type { AgentInput, AgentResult } from "../../types/agent.js";
import { parseInitReport } from "./init.js";
import { describeSignal, looksOutOfMemory, type TailBuffer } from "./output.js";
import type { InvocationSession } from "./session.js";
import type { WorkerSettings } from "./worker-spawn.js";

/** One invocation handed to a worker. */
export interface WorkerJob {
  readonly id: string;
  readonly handler: string;
  readonly module: string;
  readonly input: AgentInput;
  readonly scoped: ExecContext;
  readonly delegate: (handler: string, input: AgentInput) => Promise<AgentResult>;
  /** +1 while the job waits on a delegation (its worker holds no CPU), -1 after. */
  readonly onBlocked: (delta: 1 | -1) => void;
  /** Gets the stderr tail of the job, for results the guard builds (timeouts, cancels). */
  readonly observe: (obs: { pid?: number; stderr: TailBuffer }) => void;
}

/** The job a worker is running, and what it has used so far. */
export interface RunningJob {
  readonly job: WorkerJob;
  readonly session: InvocationSession;
  readonly stderr: TailBuffer;
  readonly resolve: (result: AgentResult) => void;
  outBytes: number;
  errBytes: number;
  channelBytes: number;
  failure: string | null;
  /** The worker printed an out-of-memory message (seen chunk by chunk, whatever the tail keeps). */
  outOfMemory: boolean;
  stopping: boolean;
  graceTimer: ReturnType<typeof setTimeout> | null;
  onAbort: () => void;
}

/** How the worker process ended. */
export interface WorkerExit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

/**
 * Counts `bytes` the running job wrote to `stream`; returns the failure when that is over
 * `maxOutputBytes` (the worker is then killed), else `null`.
 */
export function countOutput(
  cur: RunningJob,
  stream: "stdout" | "stderr",
  bytes: Buffer,
  settings: WorkerSettings,
): string | null {
  if (stream === "stderr") {
    cur.stderr.push(bytes);
    cur.errBytes += bytes.length;
    if (!cur.outOfMemory && settings.memoryLimitMb !== undefined) {
      cur.outOfMemory = looksOutOfMemory(bytes.toString("latin1"));
    }
  } else {
    cur.outBytes += bytes.length;
  }
  const written = stream === "stderr" ? cur.errBytes : cur.outBytes;
  if (written <= settings.maxOutputBytes) return null;
  return `Output limit exceeded: handler "${cur.job.handler}" wrote more than ${settings.maxOutputBytes} bytes to ${stream} (maxOutputBytes); its worker was killed.`;
}

/** How the worker ended: under a namespace's init, what the init reported of the worker itself. */
export function workerExit(
  exit: WorkerExit | null,
  report: ReturnType<typeof parseInitReport>,
): WorkerExit | null {
  if (report?.kind === "signal") return { code: null, signal: report.signal };
  if (report?.kind === "exit") return { code: report.code, signal: null };
  return exit;
}

/** Why the job `cur` ended when its worker closed: its failure, else how the worker died. */
export function deathMessage(
  cur: RunningJob,
  exit: WorkerExit | null,
  tail: string,
  settings: WorkerSettings,
): string {
  const h = cur.job.handler;
  if (cur.failure !== null) return cur.failure;
  if (
    exit !== null &&
    settings.memoryLimitMb !== undefined &&
    (cur.outOfMemory || looksOutOfMemory(tail))
  ) {
    return `Memory limit exceeded: handler "${h}" hit the V8 heap limit of its worker (memoryLimitMb = ${settings.memoryLimitMb} MiB, --max-old-space-size); the worker died${exit.signal === null ? ` with code ${exit.code}` : ` by ${describeSignal(exit.signal)}`}.`;
  }
  if (exit?.signal !== undefined && exit.signal !== null) {
    return `Worker crashed: the process running handler "${h}" was killed by signal ${describeSignal(exit.signal)}.`;
  }
  return `Worker crashed: the process running handler "${h}" exited with code ${exit?.code ?? "unknown"} (process.exit or a fatal error) before returning a result.`;
}
