import { accessSync, closeSync, constants, openSync, readSync } from "node:fs";
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
import { contextEnv } from "./env.js";
import { startHandler, type ProcessEnd, type ProcessSource } from "./handler-process.js";
import { TailBuffer, describeSignal, looksOutOfMemory, withStderr } from "./output.js";
import { InvocationSession } from "./session.js";

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
  /** Values masked in every quote of the program's stderr (see `secretValues`). */
  readonly secrets: readonly string[];
  readonly memoryLimitMb: number | undefined;
  readonly cancelGraceMs: number;
  /** How the process is started (confinement, spares or fork servers). */
  readonly source: ProcessSource;
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
 * Runs an executable handler once (the executable protocol of docs/protocol.md): AgentInput on
 * stdin, result on stdout, exit code for the status, fd 3 as the frame channel; its own process
 * group, or its own namespace when confined. Resolves (never rejects) once it is known how the
 * program ended and its stdout, stderr and channel are closed (under a namespace's init, the
 * namespace may be torn down a moment later).
 */
export function runExecutable(call: ExecutableCall): Promise<AgentResult> {
  const { handler, scoped } = call;
  const stderr = new TailBuffer(call.stderrTailBytes, call.secrets);
  return new Promise<AgentResult>((resolve) => {
    const env = { ...call.baseEnv, ...contextEnv(handler, scoped) };
    const limitKb = call.memoryLimitMb === undefined ? 0 : call.memoryLimitMb * 1024;
    const proc = startHandler(call.source, call.file, env, limitKb);
    const { pid, stdin, stdout, channel } = proc;
    const stderrStream = proc.stderr;
    call.observe({ ...(pid === undefined ? {} : { pid }), stderr, exited: proc.exited });

    let failure: string | null = null;
    let stopped: NervaError | null = null;
    let settled = false;
    let end: ProcessEnd | null = null;
    const out: Buffer[] = [];
    let outBytes = 0;
    let errBytes = 0;
    let outOfMemory = false;
    let channelBytes = 0;
    let resultFrame: Extract<WorkerFrame, { type: "result" }> | null = null;
    let graceTimer: ReturnType<typeof setTimeout> | null = null;

    /** stdout, stderr and the channel, until each has closed. */
    let openStreams = 3;
    const settleIfDone = (): void => {
      if (end !== null && openStreams === 0) settle(end);
    };
    for (const stream of [stdout, stderrStream, channel]) {
      stream.once("close", () => {
        openStreams--;
        settleIfDone();
      });
    }
    void proc.ended.then((how) => {
      if (how.kind === "spawn-error") {
        finish(errorResult(handler, spawnFailure(handler, call.file, how.error)));
        return;
      }
      end = how;
      settleIfDone();
    });

    const fail = (message: string): void => {
      if (failure === null && stopped === null) failure = message;
      proc.kill();
    };
    const session = new InvocationSession({
      handler,
      scoped,
      id: scoped.requestId,
      delegate: call.delegate,
      send: (frame) => {
        if (channel.writable) channel.write(encodeFrame(frame));
      },
      fail,
    });
    const limit = (stream: string): string =>
      `Output limit exceeded: handler "${handler}" wrote more than ${call.maxOutputBytes} bytes to ${stream} (maxOutputBytes); the process was killed.`;

    const onAbort = (): void => {
      stopped = scoped.endReason;
      if (call.cancelGraceMs > 0 && pid !== undefined) {
        proc.kill("SIGTERM");
        graceTimer = setTimeout(() => proc.kill(), call.cancelGraceMs);
      } else {
        proc.kill();
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
      // A call stopped within its grace period still ends its namespace: nothing is reused.
      if (stopped !== null) proc.kill();
      session.close();
      proc.release();
      void session.drain().then(() => {
        // A sink that failed on the last chunks fails the call, even if the program had exited.
        const sinkFailure = session.sinkFailure;
        const final =
          sinkFailure !== null && result.status === AgentStatus.SUCCESS
            ? errorResult(handler, sinkFailure)
            : result;
        resolve(withStderr(final, stderr.text(), call.secrets));
      });
    };
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

    /** The end of the call, once the program's end is known and its output streams closed. */
    function settle(how: ProcessEnd): void {
      if (settled) return;
      if (stopped !== null) {
        finish(errorResult(handler, `Handler "${handler}" was stopped: ${stopped.message}`));
        return;
      }
      if (failure !== null) {
        finish(errorResult(handler, failure));
        return;
      }
      switch (how.kind) {
        case "exec-error": {
          // The init's own complaint is noise next to this.
          stderr.clear();
          const err = Object.assign(new Error(how.code), { code: how.code });
          finish(errorResult(handler, spawnFailure(handler, call.file, err)));
          return;
        }
        case "lost":
          finish(errorResult(handler, `Handler "${handler}" could not be run: ${how.why}.`));
          return;
        case "exit":
          finish(interpret(how.code, how.signal));
          return;
        default:
          return;
      }
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
        proc.launched && (code === 126 || code === 127) ? execFailure(call.file) : null;
      if (failed !== null) {
        // The launcher's own complaint ("exec: ...: not found") says less than this does.
        stderr.clear();
        return errorResult(handler, spawnFailure(handler, call.file, failed));
      }
      return errorResult(handler, `Handler "${handler}" exited with code ${code}${reported}.`);
    };
  });
}
