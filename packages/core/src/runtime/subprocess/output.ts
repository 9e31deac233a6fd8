import { agentResult, type AgentResult } from "../../types/agent.js";

/** Keeps the last `limit` bytes written to it (the tail of a process's stderr). */
export class TailBuffer {
  readonly #limit: number;
  #chunks: Buffer[] = [];
  #bytes = 0;

  constructor(limit: number) {
    this.#limit = limit;
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
    return all.subarray(start).toString("utf8").trim();
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

/** Attaches a stderr tail to a result: `data.stderr`, and the error text of a failure. */
export function withStderr(result: AgentResult, tail: string): AgentResult {
  if (tail === "") return result;
  const data = "stderr" in result.data ? result.data : { ...result.data, stderr: tail };
  const error =
    result.status !== "success" && result.error !== null && !result.error.includes("stderr:")
      ? `${result.error} — stderr: ${quoteTail(tail)}`
      : result.error;
  return agentResult(result.handler, { ...result, data, error });
}
