import { maskSecrets } from "../../internal/secrets.js";
import { agentResult, type AgentResult } from "../../types/agent.js";

/**
 * Keeps the last `limit` bytes written to it (the tail of a process's stderr). Its text has the
 * process's configured `secrets` masked: wherever the tail is quoted (a result's error and
 * `data.stderr`, spans, logs), a child that printed its environment leaks none of them.
 */
export class TailBuffer {
  readonly #limit: number;
  readonly #secrets: readonly string[];
  #chunks: Buffer[] = [];
  #bytes = 0;

  constructor(limit: number, secrets: readonly string[] = []) {
    this.#limit = limit;
    this.#secrets = secrets;
  }

  push(chunk: Buffer): void {
    if (this.#limit === 0 || chunk.length === 0) return;
    const piece = chunk.length > this.#limit ? chunk.subarray(chunk.length - this.#limit) : chunk;
    this.#chunks.push(Buffer.from(piece));
    this.#bytes += piece.length;
    while (this.#bytes - (this.#chunks[0]?.length ?? 0) >= this.#limit) {
      this.#bytes -= (this.#chunks.shift() as Buffer).length;
    }
  }

  /** The kept bytes as text, trimmed; cut at the front when more was written than kept. */
  text(): string {
    let all = Buffer.concat(this.#chunks, this.#bytes);
    if (all.length > this.#limit) all = all.subarray(all.length - this.#limit);
    // Drop a multi-byte character cut in half at the front.
    let start = 0;
    while (start < all.length && start < 3 && ((all[start] as number) & 0xc0) === 0x80) start++;
    return maskSecrets(all.subarray(start).toString("utf8"), this.#secrets).trim();
  }

  clear(): void {
    this.#chunks = [];
    this.#bytes = 0;
  }
}

/** `text` as one quoted line for an error message (newlines shown as ⏎). */
export function quoteTail(text: string): string {
  return JSON.stringify(text.replace(/\r?\n/g, " ⏎ "));
}

/** Human name of a fatal signal, for error messages. */
export function describeSignal(signal: NodeJS.Signals): string {
  const names: Partial<Record<NodeJS.Signals, string>> = {
    SIGSEGV: "segmentation fault",
    SIGABRT: "aborted",
    SIGBUS: "bus error",
    SIGFPE: "floating-point exception",
    SIGILL: "illegal instruction",
    SIGKILL: "killed",
    SIGTERM: "terminated",
  };
  const name = names[signal];
  return name === undefined ? signal : `${signal}, ${name}`;
}

/** Text a process prints when it runs out of memory (V8, Python, C++, glibc, ulimit). */
const OUT_OF_MEMORY =
  /heap out of memory|Reached heap limit|MemoryError|std::bad_alloc|Cannot allocate memory|out of memory/i;

export function looksOutOfMemory(stderr: string): boolean {
  return OUT_OF_MEMORY.test(stderr);
}

/** Kills a process group (the leader's pid, negated); a group that is already gone is fine. */
export function killGroup(pid: number | undefined, signal: NodeJS.Signals = "SIGKILL"): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, signal);
  } catch {
    // ESRCH: the group has already exited.
  }
}

/**
 * Attaches a stderr tail to a result: `data.stderr`, and the error text of a failure. The error
 * a child reported is its own text: the process's configured `secrets` are masked in it too.
 */
export function withStderr(
  result: AgentResult,
  tail: string,
  secrets: readonly string[] = [],
): AgentResult {
  if (result.error !== null && secrets.length > 0) {
    const masked = maskSecrets(result.error, secrets);
    if (masked !== result.error) result = agentResult(result.handler, { ...result, error: masked });
  }
  if (tail === "") return result;
  const data = "stderr" in result.data ? result.data : { ...result.data, stderr: tail };
  const error =
    result.status !== "success" && result.error !== null && !result.error.includes("stderr:")
      ? `${result.error} — stderr: ${quoteTail(tail)}`
      : result.error;
  return agentResult(result.handler, { ...result, data, error });
}
