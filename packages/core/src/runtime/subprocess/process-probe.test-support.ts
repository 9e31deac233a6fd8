// Test support (not a test file, not built): watches processes from the outside, for the tests
// that prove a process or its whole group is gone.
import { readdirSync, readFileSync, readlinkSync } from "node:fs";

/** True while `pid` exists and is not a zombie waiting to be reaped. */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return false;
  }
}

/**
 * How soon after a deadline, a cancel or close() a killed process must be gone in these tests.
 * The fixtures would run for 30 s or forever by themselves, so a deadline that only advised (or
 * a SIGTERM never followed by a SIGKILL) still fails; 2 s leaves a loaded machine (a full test
 * run on two busy cores) room to schedule the kill and the reaping, which took up to 110 ms
 * there. How fast a kill is, is a benchmark's question, not a timed unit test's.
 */
export const KILL_MARGIN_MS = 2000;

/** Milliseconds until `pid` is gone (polled every 2 ms, up to `limitMs`), or Infinity. */
export async function goneWithin(pid: number, limitMs = 2 * KILL_MARGIN_MS): Promise<number> {
  const started = performance.now();
  while (performance.now() - started < limitMs) {
    if (!alive(pid)) return performance.now() - started;
    await new Promise((r) => setTimeout(r, 2));
  }
  return Infinity;
}

/** Milliseconds until no process is left in group `pgid` (zombies waiting for init count as gone). */
export async function groupGoneWithin(pgid: number, limitMs = 2 * KILL_MARGIN_MS): Promise<number> {
  const started = performance.now();
  while (performance.now() - started < limitMs) {
    try {
      process.kill(-pgid, 0);
    } catch {
      return performance.now() - started;
    }
    const members = readdirSync("/proc").filter((p) => /^\d+$/.test(p) && alive(Number(p)));
    const inGroup = members.some((p) => {
      try {
        const stat = readFileSync(`/proc/${p}/stat`, "utf8");
        return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[2]) === pgid;
      } catch {
        return false;
      }
    });
    if (!inGroup) return performance.now() - started;
    await new Promise((r) => setTimeout(r, 2));
  }
  return Infinity;
}

/** Pids of the live processes (zombies excluded) whose command line contains `marker`. */
export function withMarker(marker: string): number[] {
  const found: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, "utf8");
      if (cmdline.includes(marker) && alive(Number(entry))) found.push(Number(entry));
    } catch {
      // gone while scanning
    }
  }
  return found;
}

/** Milliseconds until no live process carries `marker` in its command line, or Infinity. */
export async function markerGoneWithin(
  marker: string,
  limitMs = 2 * KILL_MARGIN_MS,
): Promise<number> {
  const started = performance.now();
  while (performance.now() - started < limitMs) {
    if (withMarker(marker).length === 0) return performance.now() - started;
    await new Promise((r) => setTimeout(r, 5));
  }
  return Infinity;
}

/**
 * The host's pid of the process that a handler reported as `reported` (its `process.pid`, its
 * `$$`): inside a PID namespace that is the namespace's numbering. `launcher` is the pid the
 * runtime started (stats(), error messages); its namespace for children is the handler's. Without
 * a namespace, `reported` itself. Throws when no such process is alive.
 */
export function hostPid(reported: number, launcher: number): number {
  const ns = readlinkSync(`/proc/${launcher}/ns/pid_for_children`);
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readlinkSync(`/proc/${entry}/ns/pid`) !== ns) continue;
      const nspid = /^NSpid:\s+(.*)$/m.exec(readFileSync(`/proc/${entry}/status`, "utf8"));
      const inner = nspid?.[1]?.trim().split(/\s+/).at(-1);
      if (Number(inner) === reported) return Number(entry);
    } catch {
      // gone while scanning
    }
  }
  throw new Error(`no process ${reported} in the PID namespace of ${launcher}`);
}
