import { readFileSync } from "node:fs";
import { hostname } from "node:os";
import type Dockerode from "dockerode";
import { importOptional } from "../../internal/optional-dependency.js";
import { messageOf } from "../results.js";
import type { DockerOptions } from "./options.js";

export type Docker = Dockerode;
export type Container = Dockerode.Container;

/** Connects a dockerode client (dockerode is loaded lazily: it is an optional peer dependency). */
export async function connectDocker(options: DockerOptions): Promise<Docker> {
  const mod = await importOptional(
    "dockerode",
    () => import("dockerode") as Promise<{ default: typeof Dockerode }>,
    "ContainerRuntime",
  );
  const Ctor = mod.default;
  return new Ctor(options as Dockerode.DockerOptions);
}

/** HTTP status of a Docker API error (404 no such container, 409 conflict...), if any. */
export function statusOf(err: unknown): number | undefined {
  const code = (err as { statusCode?: unknown } | null)?.statusCode;
  return typeof code === "number" ? code : undefined;
}

/** A readable explanation of a failed Docker API call. */
export function dockerError(action: string, err: unknown): string {
  const raw = messageOf(err)
    .replace(/^\(HTTP code \d+\)\s*/, "")
    .trim();
  const code = (err as { code?: unknown } | null)?.code;
  if (code === "ENOENT" || code === "ECONNREFUSED" || code === "EACCES") {
    return `Docker engine unreachable while trying to ${action} (${String(code)}: ${raw}). Is dockerd running, and may this process use its socket?`;
  }
  return `Docker failed to ${action}: ${raw}`;
}

// ---- ownership labels ------------------------------------------------------------------------

/**
 * Start time of process `pid` in clock ticks since boot (field 22 of /proc/<pid>/stat), so a pid
 * reused by another process is not mistaken for the owner. `null` when /proc is not available.
 */
export function processStartTicks(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // The command name (field 2) may contain spaces and parentheses: split after the last ")".
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return fields[19] ?? null;
  } catch {
    return null;
  }
}

/** `<hostname>:<pid>:<start ticks>` of this process: what the `owner` label records. */
export const OWNER_ID = `${hostname()}:${process.pid}:${processStartTicks(process.pid) ?? "0"}`;

/**
 * Whether the process that labelled a container as `owner` is gone for sure. Containers owned
 * by another host (a shared engine) are never judged: that host may be alive.
 */
export function ownerIsGone(owner: string | undefined): boolean {
  if (owner === undefined) return false;
  const m = /^(.*):(\d+):(\d+)$/.exec(owner);
  if (m === null || m[1] !== hostname()) return false;
  const pid = Number(m[2]);
  if (owner === OWNER_ID) return false;
  try {
    process.kill(pid, 0);
  } catch (err) {
    // EPERM: the process exists but belongs to someone else.
    return (err as NodeJS.ErrnoException).code === "ESRCH";
  }
  const ticks = processStartTicks(pid);
  return ticks !== null && m[3] !== "0" && ticks !== m[3];
}

/** Label keys used by a runtime with label prefix `prefix`. */
export function labelKeys(prefix: string) {
  return {
    runtime: `${prefix}.runtime`,
    owner: `${prefix}.owner`,
    instance: `${prefix}.instance`,
    handler: `${prefix}.handler`,
    mode: `${prefix}.mode`,
  } as const;
}

/**
 * Removes every container labelled by a runtime with `prefix` whose owner process is gone (a
 * host that crashed before `close()`). Returns the ids removed.
 */
export async function removeOrphans(docker: Docker, prefix: string): Promise<string[]> {
  const keys = labelKeys(prefix);
  const listed = await docker.listContainers({
    all: true,
    filters: { label: [`${keys.runtime}=container`] },
  });
  const orphans = listed.filter((c) => ownerIsGone(c.Labels?.[keys.owner]));
  await Promise.all(orphans.map((c) => removeContainer(docker.getContainer(c.Id))));
  return orphans.map((c) => c.Id);
}

/** Kills (SIGKILL) and removes a container; a container that is already gone is fine. */
export async function removeContainer(container: Container): Promise<void> {
  try {
    await container.kill({ signal: "SIGKILL" });
  } catch (err) {
    // 404: gone already; 409: not running. Both are what we want.
    if (statusOf(err) !== 404 && statusOf(err) !== 409) throw err;
  }
  try {
    await container.remove({ force: true, v: true });
  } catch (err) {
    // 409 "removal already in progress" happens when two cleanups race; 404 means done.
    if (statusOf(err) !== 404 && statusOf(err) !== 409) throw err;
  }
}

// ---- the multiplexed attach stream -------------------------------------------------------------

export const STDOUT = 1;
export const STDERR = 2;

/**
 * Splits Docker's multiplexed attach stream (8-byte header: stream type, 3 zero bytes, payload
 * length big-endian) into stdout and stderr payloads, across arbitrary chunk boundaries.
 */
export class Demuxer {
  #pending: Buffer = Buffer.alloc(0);

  constructor(private readonly onFrame: (stream: number, payload: Buffer) => void) {}

  push(chunk: Buffer): void {
    let buf = this.#pending.length === 0 ? chunk : Buffer.concat([this.#pending, chunk]);
    while (buf.length >= 8) {
      const size = buf.readUInt32BE(4);
      if (buf.length < 8 + size) break;
      const stream = buf[0] ?? 0;
      this.onFrame(stream, buf.subarray(8, 8 + size));
      buf = buf.subarray(8 + size);
    }
    this.#pending = buf.length === 0 ? Buffer.alloc(0) : Buffer.from(buf);
  }
}

/** How long to wait for the engine's OOM event after a container died of SIGKILL. */
const OOM_EVENT_WAIT_MS = 1000;

/**
 * Exit code of a finished container and whether the kernel's OOM killer ended it. The engine
 * records the OOM event separately from the exit, sometimes a moment later: a container that died
 * of SIGKILL (137) is re-inspected briefly before concluding it was not the memory limit.
 */
export async function exitState(
  container: Container,
): Promise<{ running: boolean; exitCode: number; oomKilled: boolean }> {
  const started = Date.now();
  for (;;) {
    const state = (await container.inspect()).State;
    if (state.OOMKilled === true) {
      return { running: state.Running, exitCode: state.ExitCode, oomKilled: true };
    }
    if (state.Running || state.ExitCode !== 137 || Date.now() - started >= OOM_EVENT_WAIT_MS) {
      return { running: state.Running, exitCode: state.ExitCode, oomKilled: false };
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}
