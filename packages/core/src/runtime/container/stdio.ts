import type { Duplex } from "node:stream";
import { maskSecrets, secretValues } from "../../internal/secrets.js";
import type { ExecContext } from "../../context/exec-context.js";
import { agentResult, type AgentInput, type AgentResult } from "../../types/agent.js";
import { errorResult, messageOf, thrownResult } from "../results.js";
import { declinedResult, parseStdout } from "../subprocess/executable.js";
import { TailBuffer, withStderr } from "../subprocess/output.js";
import {
  Demuxer,
  dockerError,
  exitState,
  STDERR,
  STDOUT,
  type Container,
  type Docker,
} from "./docker.js";
import { contextEnv, type HandlerSpec } from "./spec.js";

/** How much of a container's stderr is kept for the result. */
export const STDERR_TAIL_BYTES = 4096;

/** What the per-call and warm runners need from the runtime that owns the containers. */
export interface ContainerHost {
  readonly labelPrefix: string;
  readonly instanceId: string;
  readonly maxOutputBytes: number;
  /** Resolves once the engine answered and orphans were swept; rejects with a readable error. */
  docker(): Promise<Docker>;
  /**
   * Creates a container and records it, so that `close()` removes it (a creation still in
   * flight when `close()` runs is waited for, then removed). Rejects with a readable error.
   */
  create(spec: HandlerSpec, env: readonly string[]): Promise<Container>;
  /** Kills and removes a container in the background; `close()` waits for it. */
  discard(container: Container): Promise<void>;
}

/** How a stdio container ended. */
export interface StdioOutcome {
  readonly exitCode: number;
  readonly stdout: Buffer;
  readonly stderrTail: string;
  readonly oomKilled: boolean;
  readonly overflow: boolean;
}

/**
 * Runs one invocation of a stdio handler in a fresh container: the AgentInput JSON goes to
 * stdin (then EOF), stdout is the result, the exit code says success (0), wrong handler (2) or
 * error. The container is killed the moment `scoped` ends and removed in every case.
 */
export async function runStdioCall(
  host: ContainerHost,
  spec: HandlerSpec,
  input: AgentInput,
  scoped: ExecContext,
): Promise<AgentResult> {
  let container: Container | undefined;
  let socket: Duplex | undefined;
  const stop = (): void => {
    socket?.destroy();
    if (container !== undefined) void host.discard(container);
  };
  scoped.signal.addEventListener("abort", stop, { once: true });
  try {
    try {
      container = await host.create(spec, contextEnv(spec.name, scoped));
    } catch (err) {
      return thrownResult(spec.name, err);
    }
    if (scoped.signal.aborted) return errorResult(spec.name, "ended before the container started");
    const outcome = await execute(host, container, input, scoped, (s) => (socket = s));
    return stdioResult(spec, outcome);
  } catch (err) {
    return errorResult(spec.name, dockerError(`run handler "${spec.name}"`, err));
  } finally {
    scoped.signal.removeEventListener("abort", stop);
    socket?.destroy();
    if (container !== undefined) void host.discard(container);
  }
}

async function execute(
  host: ContainerHost,
  container: Container,
  input: AgentInput,
  scoped: ExecContext,
  onSocket: (socket: Duplex) => void,
): Promise<StdioOutcome> {
  const socket = (await container.attach({
    stream: true,
    stdin: true,
    stdout: true,
    stderr: true,
    hijack: true,
  })) as Duplex;
  onSocket(socket);
  const stdout: Buffer[] = [];
  let stdoutBytes = 0;
  let overflow = false;
  const stderr = new TailBuffer(STDERR_TAIL_BYTES);
  const demux = new Demuxer((stream, payload) => {
    if (stream === STDERR) {
      stderr.push(payload);
      return;
    }
    if (stream !== STDOUT || overflow) return;
    stdoutBytes += payload.length;
    if (stdoutBytes > host.maxOutputBytes) {
      // Too much output is an error, never silently cut: stop the container now.
      overflow = true;
      void host.discard(container);
      return;
    }
    stdout.push(payload);
  });
  const drained = new Promise<void>((resolve) => {
    socket.on("data", (chunk: Buffer) => demux.push(chunk));
    socket.once("end", resolve);
    socket.once("close", resolve);
    // A killed container resets the connection; what arrived so far is all there is.
    socket.on("error", () => resolve());
  });
  const exited = container.wait({ condition: "next-exit" }) as Promise<{ StatusCode: number }>;
  // Not awaited when the call ends early (kill, failed start): never an unhandled rejection.
  exited.catch(() => undefined);
  await container.start();
  if (scoped.signal.aborted)
    return { exitCode: -1, stdout: Buffer.alloc(0), stderrTail: "", oomKilled: false, overflow };
  socket.end(JSON.stringify(input));
  const { StatusCode: exitCode } = await exited;
  await drained;
  let oomKilled = false;
  if (exitCode !== 0 && exitCode !== 2 && !overflow && !scoped.signal.aborted) {
    oomKilled = (await exitState(container)).oomKilled;
  }
  return {
    exitCode,
    stdout: Buffer.concat(stdout),
    stderrTail: stderr.text(),
    oomKilled,
    overflow,
  };
}

/**
 * Maps a finished stdio container to an AgentResult (the executable protocol, docs/protocol.md),
 * parsing stdout and attaching the stderr tail exactly as the SubprocessRuntime does.
 */
export function stdioResult(spec: HandlerSpec, outcome: StdioOutcome): AgentResult {
  // The tail quotes the container's output: the values the app configured in its env are masked.
  const tail = maskSecrets(outcome.stderrTail, secretValues(spec.options.env));
  return withStderr(interpret(spec, outcome), tail, secretValues(spec.options.env));
}

function interpret(spec: HandlerSpec, outcome: StdioOutcome): AgentResult {
  const { name } = spec;
  if (outcome.overflow) {
    return errorResult(
      name,
      `Handler "${name}" wrote more than maxOutputBytes of output; the container was killed.`,
    );
  }
  if (outcome.oomKilled) {
    return errorResult(
      name,
      `Handler "${name}" exceeded its memory limit of ${spec.options.memoryLimit}: the container was OOM-killed (exit code ${outcome.exitCode}).`,
    );
  }
  if (outcome.exitCode !== 0 && outcome.exitCode !== 2) {
    const how =
      outcome.exitCode === 137
        ? "was killed (SIGKILL, exit code 137)"
        : outcome.exitCode > 128
          ? `was killed by signal ${outcome.exitCode - 128} (exit code ${outcome.exitCode})`
          : `exited with code ${outcome.exitCode}`;
    return errorResult(name, `Handler "${name}" ${how}.`);
  }
  let parsed: ReturnType<typeof parseStdout>;
  try {
    parsed = parseStdout(outcome.stdout.toString("utf8"));
  } catch (err) {
    return errorResult(
      name,
      `Handler "${name}" printed a result it cannot return: ${messageOf(err)}`,
    );
  }
  return outcome.exitCode === 2 ? declinedResult(name, parsed) : agentResult(name, parsed);
}
