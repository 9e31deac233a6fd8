// Test support (not a test file, not built): watches processes from the outside, for the tests
// that prove a process or its whole group is gone.
import { readdirSync, readFileSync } from "node:fs";

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

/** Milliseconds until `pid` is gone (polled every 2 ms, up to `limitMs`), or Infinity. */
export async function goneWithin(pid: number, limitMs = 2000): Promise<number> {
  const started = performance.now();
  while (performance.now() - started < limitMs) {
    if (!alive(pid)) return performance.now() - started;
    await new Promise((r) => setTimeout(r, 2));
  }
  return Infinity;
}

/** Milliseconds until no process is left in group `pgid` (zombies waiting for init count as gone). */
export async function groupGoneWithin(pgid: number, limitMs = 2000): Promise<number> {
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

/** The first chunk, or a failure naming the result if the invocation ends without one. */
