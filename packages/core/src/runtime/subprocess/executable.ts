import { spawn, type ChildProcess } from "node:child_process";
import { accessSync, closeSync, constants, openSync, readSync } from "node:fs";
import type { Readable, Writable } from "node:stream";
import type { ExecContext } from "../../context/exec-context.js";
import { ErrorCode, type NervaError } from "../../errors.js";
import { checkJsonLimits } from "../../internal/json-limits.js";
import {
  agentResult,
  type AgentInput,
  type AgentResult,
  type JsonValue,
} from "../../types/agent.js";
import { AgentStatus } from "../../types/status.js";
import { FrameDecoder, encodeFrame } from "../protocol/codec.js";
import { WorkerFrameSchema, type WorkerFrame } from "../protocol/frames.js";
import { RESULT_DATA_LIMITS, errorResult, messageOf } from "../results.js";
import { STATUS_FD, parseInitReport, type InitReport } from "./init.js";
import type { Launcher } from "./launcher.js";
import { contextEnv } from "./env.js";
import { TailBuffer, describeSignal, killGroup, looksOutOfMemory, withStderr } from "./output.js";
import { InvocationSession } from "./session.js";
import type { SpareLauncher } from "./spare.js";

/** Settings of one executable call. */
export interface ExecutableCall {
  readonly handler: string;
  readonly file: string;
  readonly cwd: string;
  readonly input: AgentInput;
  readonly scoped: ExecContext;
  readonly baseEnv: Readonly<Record<string, string>>;
  readonly maxOutputBytes: number;
  readonly stderrTailBytes: number;
  readonly memoryLimitMb: number | undefined;
  readonly cancelGraceMs: number;
  /** How the process is started (confinement, memory limit). */
  readonly launcher: Launcher;
  /** Launchers started ahead of need, when the launcher has an init (null otherwise). */
  readonly spares: SpareLauncher | null;
  readonly delegate: (handler: string, input: AgentInput) => Promise<AgentResult>;
  /**
   * Told the pid once spawned, the stderr tail as it grows (for results the guard builds), and
   * when the process has exited (the result may come first: see {@link runExecutable}).
   */
  readonly observe: (obs: { pid?: number; stderr: TailBuffer; exited: Promise<void> }) => void;
}

const FRAME_SLACK = 64 * 1024;

/** Why spawn failed, in words that say what to do. */
function spawnFailure(handler: string, file: string, err: NodeJS.ErrnoException): string {
  switch (err.code) {
    case "EACCES":
      return `Handler "${handler}" could not be started: ${file} is not executable (EACCES). Make it executable (chmod +x) and start it with a #! line.`;
    case "ENOENT":
      return `Handler "${handler}" could not be started: ${file} was not found, or the interpreter on its #! line does not exist (ENOENT).`;
    case "ENOEXEC":
      return `Handler "${handler}" could not be started: ${file} is not a program the system can run (ENOEXEC); start it with a #! line.`;
    default:
      return `Handler "${handler}" could not be started: ${err.code ?? "error"} ${err.message}`;
  }
}

/**
 * Why `file` cannot be executed, when a launcher (the confinement or the memory-limit shell) exec'd
 * it and exited 126/127: the error spawn would have given. Null when it looks runnable, so the
 * handler's own exit code 126 or 127 is reported as such.
 */
function execFailure(file: string): NodeJS.ErrnoException | null {
  const failure = (code: string): NodeJS.ErrnoException =>
    Object.assign(new Error(code), { code, syscall: "spawn" });
  try {
    accessSync(file, constants.X_OK);
  } catch (err) {
    return failure((err as NodeJS.ErrnoException).code ?? "EACCES");
  }
  let head: string;
  try {
    const fd = openSync(file, "r");
    try {
      const buf = Buffer.alloc(256);
      head = buf.toString("latin1", 0, readSync(fd, buf, 0, buf.length, 0));
    } finally {
      closeSync(fd);
    }
  } catch {
    return failure("EACCES");
  }
  if (!head.startsWith("#!")) return null;
  const interpreter = head.slice(2).split("\n")[0]?.trim().split(/\s+/)[0] ?? "";
  try {
    accessSync(interpreter, constants.X_OK);
    return null;
  } catch {
    return failure("ENOENT");
  }
}

/** The fix named by an error about a result printed on stdout. */
const STDOUT_FIX = "Print flatter JSON (at most 63 levels, a million values).";

/**
 * Parses an executable's stdout into output + data (docs/protocol.md). The JSON object becomes
 * the result's `data`, so it gets the same bounds: nested deeper than 63 levels (the object is
 * the first) or holding more than a million values throws NervaError INVALID_INPUT (label
 * `stdout`), checked without recursion before anything recurses into it.
 *
 * @example
 * parseStdout('{"output": "hi", "n": 1}\n'); // { output: "hi", data: { n: 1 } }
 */
export function parseStdout(text: string): { output: string; data: Record<string, JsonValue> } {
  const trimmed = text.trim();
  if (trimmed.startsWith("{")) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(trimmed);
    } catch {
      parsed = undefined;
    }
    if (typeof parsed === "object" && parsed !== null && !Array.isArray(parsed)) {
      checkJsonLimits(parsed, RESULT_DATA_LIMITS, ErrorCode.INVALID_INPUT, "stdout", STDOUT_FIX);
      const { output, response, ...rest } = parsed as Record<string, JsonValue>;
      const data: Record<string, JsonValue> = rest;
      const text = output !== undefined ? output : response;
      if (output !== undefined && response !== undefined) data["response"] = response;
      return {
        output:
          text === undefined || text === null
            ? ""
            : typeof text === "string"
              ? text
              : JSON.stringify(text),
        data,
      };
    }
  }
  return { output: text.replace(/\r?\n$/, ""), data: {} };
}

/** The process of one call: the program itself, or a launcher that runs it. */
interface Started {
  readonly child: ChildProcess;
  /** For the namespace's init: the program and its environment, to write on its socket. */
  readonly handshake: Buffer | null;
  /** Whether `child` starts the program (a shell, setpriv, unshare) rather than being it. */
  readonly launched: boolean;
}

function start(call: ExecutableCall, env: Record<string, string>, limitKb: number): Started {
  const run = call.launcher.launch(call.file, [], env, limitKb);
  if (run.handshake !== null && call.spares !== null) {
    return { child: call.spares.take(), handshake: run.handshake, launched: true };
  }
  const child = spawn(run.command, run.args, {
    cwd: call.cwd,
    env: run.env,
    detached: true,
    stdio:
      run.handshake === null
        ? ["pipe", "pipe", "pipe", "pipe"]
        : ["pipe", "pipe", "pipe", "pipe", "pipe"],
  });
  return { child, handshake: run.handshake, launched: run.command !== call.file };
}

/**
 * The result of a process that exited with code 2 (the executable protocol's "wrong handler"):
 * stdout parsed as for a success, and the reason in `error`: the `error` string the process
 * printed (`{"error": "not my job"}`), else a sentence saying it declined.
 */
export function declinedResult(
  handler: string,
  parsed: { output: string; data: Record<string, JsonValue> },
): AgentResult {
  const { error, ...rest } = parsed.data;
  const reason = typeof error === "string" && error !== "" ? error : null;
  return agentResult(handler, {
    status: AgentStatus.WRONG_HANDLER,
    output: parsed.output,
    data: reason === null ? parsed.data : rest,
    error: reason ?? `Handler "${handler}" declined the request (exit code 2).`,
  });
}

/**
 * Runs an executable handler once (the executable protocol of docs/protocol.md): a new process
 * group per call, AgentInput on stdin, result on stdout, exit code for the status, fd 3 as the
 * frame channel. Resolves (never rejects) when the process and all its stdio are closed, or,
 * under a namespace's init, once the init reported the program's end and its stdio is closed
 * (the namespace is torn down after that, which takes the kernel a few milliseconds).
 */
export function runExecutable(call: ExecutableCall): Promise<AgentResult> {
  const { handler, scoped } = call;
  const stderr = new TailBuffer(call.stderrTailBytes);
  return new Promise<AgentResult>((resolve) => {
    const env = { ...call.baseEnv, ...contextEnv(handler, scoped) };
    const limitKb = call.memoryLimitMb === undefined ? 0 : call.memoryLimitMb * 1024;
    const { child, handshake, launched } = start(call, env, limitKb);
    const hasInit = handshake !== null;
    const pid = child.pid;
    const exited = new Promise<void>((done) => {
      if (child.exitCode !== null || child.signalCode !== null || pid === undefined) done();
      else child.once("exit", () => done()).once("error", () => done());
    });
    call.observe({ ...(pid === undefined ? {} : { pid }), stderr, exited });

    let failure: string | null = null;
    let stopped: NervaError | null = null;
    let settled = false;
    let exit: { code: number | null; signal: NodeJS.Signals | null } | null = null;
    const out: Buffer[] = [];
    let outBytes = 0;
    let errBytes = 0;
    let outOfMemory = false;
    let channelBytes = 0;
    let resultFrame: Extract<WorkerFrame, { type: "result" }> | null = null;
    let graceTimer: ReturnType<typeof setTimeout> | null = null;

    const stdin = child.stdio[0] as Writable;
    const stdout = child.stdio[1] as Readable;
    const stderrStream = child.stdio[2] as Readable;
    const channel = child.stdio[3] as (Readable & Writable) | null | undefined;
    let initText = "";
    let report: InitReport | null = null;
    /** stdout, stderr and the channel, until each has closed. */
    let openStreams = 3;
    const settleOnReport = (): void => {
      if (report !== null && openStreams === 0) settle(exit ?? { code: null, signal: null });
    };
    for (const stream of [stdout, stderrStream, channel]) {
      if (stream === null || stream === undefined) openStreams--;
      else
        stream.once("close", () => {
          openStreams--;
          settleOnReport();
        });
    }
    if (handshake !== null) {
      const status = child.stdio[STATUS_FD] as Readable & Writable;
      status.on("error", () => undefined);
      status.write(handshake);
      status.setEncoding("latin1");
      status.on("data", (text: string) => {
        if (initText.length < 64) initText += text;
        report ??= parseInitReport(initText);
        settleOnReport();
      });
    }

    const fail = (message: string): void => {
      if (failure === null && stopped === null) failure = message;
      killGroup(pid);
    };
    const session = new InvocationSession({
      handler,
      scoped,
      id: scoped.requestId,
      delegate: call.delegate,
      send: (frame) => {
        if (channel?.writable === true) channel.write(encodeFrame(frame));
      },
      fail,
    });
    const limit = (stream: string): string =>
      `Output limit exceeded: handler "${handler}" wrote more than ${call.maxOutputBytes} bytes to ${stream} (maxOutputBytes); the process was killed.`;

    const onAbort = (): void => {
      stopped = scoped.endReason;
      if (call.cancelGraceMs > 0 && pid !== undefined) {
        killGroup(pid, "SIGTERM");
        graceTimer = setTimeout(() => killGroup(pid), call.cancelGraceMs);
      } else {
        killGroup(pid);
      }
    };
    const signal = scoped.signal;
    if (signal.aborted) onAbort();
    else signal.addEventListener("abort", onAbort, { once: true });

    const finish = (result: AgentResult): void => {
      if (settled) return;
      settled = true;
      signal.removeEventListener("abort", onAbort);
      if (graceTimer !== null) clearTimeout(graceTimer);
      session.close();
      void session.drain().then(() => resolve(withStderr(result, stderr.text())));
    };
    child.on("error", (err: NodeJS.ErrnoException) => {
      // spawn failures (ENOENT, EACCES) arrive here, before any exit.
      if (exit === null && err.syscall?.startsWith("spawn") === true) {
        finish(errorResult(handler, spawnFailure(handler, call.file, err)));
      }
    });
    stdin.on("error", () => {
      // EPIPE: the handler exited without reading its input; its exit code tells the story.
    });
    stdin.end(JSON.stringify(call.input));

    stdout.on("data", (bytes: Buffer) => {
      outBytes += bytes.length;
      if (outBytes > call.maxOutputBytes) fail(limit("stdout"));
      else out.push(bytes);
    });
    stderrStream.on("data", (bytes: Buffer) => {
      errBytes += bytes.length;
      stderr.push(bytes);
      if (!outOfMemory && limitKb !== 0) outOfMemory = looksOutOfMemory(bytes.toString("latin1"));
      if (errBytes > call.maxOutputBytes) fail(limit("stderr"));
    });
    if (channel !== null && channel !== undefined) {
      const decoder = new FrameDecoder({
        schema: WorkerFrameSchema,
        maxFrameBytes: call.maxOutputBytes + FRAME_SLACK,
        onFrame: (frame, bytes) => {
          channelBytes += bytes;
          if (channelBytes > call.maxOutputBytes) {
            fail(limit("its channel (fd 3)"));
            return;
          }
          // The process serves this one invocation: an id, if given, must be its id.
          const id = "id" in frame ? frame.id : undefined;
          if (id !== undefined && id !== scoped.requestId) {
            fail(
              `Protocol error on the channel of "${handler}": a ${frame.type} frame for invocation "${id}", which is not running (this call is "${scoped.requestId}"; omit the id).`,
            );
            return;
          }
          if (session.handle(frame)) return;
          if (frame.type === "result") resultFrame = frame;
          else if (frame.type === "error") fail(`Handler "${handler}" reported: ${frame.message}`);
        },
        onError: (err) => fail(`Protocol error on the channel of "${handler}": ${err.message}`),
      });
      channel.on("data", (bytes: Buffer) => decoder.push(bytes));
      // A frame cut off by the end of the channel is a protocol error, not a frame to forget.
      channel.on("end", () => decoder.end());
      channel.on("error", () => undefined);
    }

    child.on("exit", (code, sig) => {
      exit = { code, signal: sig };
      // Nothing the handler started may outlive it.
      killGroup(pid);
    });
    child.on("close", (code: number | null, sig: NodeJS.Signals | null) => {
      settle(exit ?? { code, signal: sig });
    });
    /** The end of the call: `status` is the spawned process's, unless the init reported. */
    function settle(status: { code: number | null; signal: NodeJS.Signals | null }): void {
      if (settled) return;
      if (stopped !== null) {
        finish(errorResult(handler, `Handler "${handler}" was stopped: ${stopped.message}`));
        return;
      }
      if (failure !== null) {
        finish(errorResult(handler, failure));
        return;
      }
      if (report?.kind === "exec-error") {
        // The init's own complaint is noise next to this.
        stderr.clear();
        const err = Object.assign(new Error(report.code), { code: report.code });
        finish(errorResult(handler, spawnFailure(handler, call.file, err)));
        return;
      }
      if (report?.kind === "signal") finish(interpret(null, report.signal));
      else if (report?.kind === "exit") finish(interpret(report.code, null));
      else finish(interpret(status.code, status.signal));
    }

    const interpret = (code: number | null, sig: NodeJS.Signals | null): AgentResult => {
      const text = Buffer.concat(out, outBytes).toString("utf8");
      let parsed: ReturnType<typeof parseStdout>;
      try {
        parsed = parseStdout(text);
      } catch (err) {
        if (sig !== null || (code !== 0 && code !== 2)) parsed = { output: "", data: {} };
        else {
          return errorResult(
            handler,
            `Handler "${handler}" printed a result it cannot return: ${messageOf(err)}`,
          );
        }
      }
      if (parsed.output === "" && session.chunks > 0) parsed.output = session.streamed;
      if (sig !== null) {
        const oom = limitKb !== 0 && (outOfMemory || looksOutOfMemory(stderr.text()));
        return errorResult(
          handler,
          oom
            ? `Memory limit exceeded: handler "${handler}" ran out of its ${call.memoryLimitMb} MiB address space (memoryLimitMb, ulimit -v) and was killed by ${describeSignal(sig)}.`
            : `Handler "${handler}" was killed by signal ${describeSignal(sig)}.`,
        );
      }
      if (code === 0) {
        if (resultFrame !== null) {
          const r = resultFrame.result;
          return agentResult(handler, {
            ...r,
            output: r.output ?? parsed.output,
          });
        }
        return agentResult(handler, parsed);
      }
      if (code === 2) return declinedResult(handler, parsed);
      const reported = typeof parsed.data["error"] === "string" ? `: ${parsed.data["error"]}` : "";
      if (limitKb !== 0 && (outOfMemory || looksOutOfMemory(stderr.text()))) {
        return errorResult(
          handler,
          `Memory limit exceeded: handler "${handler}" ran out of its ${call.memoryLimitMb} MiB address space (memoryLimitMb, ulimit -v) and exited with code ${code}.`,
        );
      }
      const failed =
        launched && !hasInit && (code === 126 || code === 127) ? execFailure(call.file) : null;
      if (failed !== null) {
        // The launcher's own complaint ("exec: ...: not found") says less than this does.
        stderr.clear();
        return errorResult(handler, spawnFailure(handler, call.file, failed));
      }
      return errorResult(handler, `Handler "${handler}" exited with code ${code}${reported}.`);
    };
  });
}
