import { spawnSync } from "node:child_process";
import {
  accessSync,
  closeSync,
  constants,
  mkdtempSync,
  openSync,
  readFileSync,
  rmSync,
  writeSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, isAbsolute, join } from "node:path";
import { ErrorCode, NervaError } from "../../errors.js";
import { FIRST_CALL_FD, FORK_SERVER_CALLS } from "./fork-server-script.js";
import { encodeHandshake } from "./init.js";
import {
  Confinement,
  SH,
  makeLauncher,
  type ConfinementMode,
  type Launcher,
  type LauncherTools,
} from "./launcher.js";

/** Strongest first: the order `auto` tries them in. */
const CHAIN: readonly ConfinementMode[] = [
  Confinement.USER_NAMESPACE,
  Confinement.PID_NAMESPACE,
  Confinement.CAPABILITIES,
  Confinement.NONE,
];

interface Probed {
  readonly launcher: Launcher | null;
  /** Why the mode is not available (null when it is). */
  readonly reason: string | null;
}

/** The first executable `name` in a directory of the host's PATH (absolute entries only). */
function which(name: string): string | null {
  for (const dir of (process.env["PATH"] ?? "").split(delimiter)) {
    if (!isAbsolute(dir)) continue;
    const file = join(dir, name);
    try {
      accessSync(file, constants.X_OK);
      return file;
    } catch {
      // not here
    }
  }
  return null;
}

/**
 * Runs a launcher's command for `sh -c 'exit 3'` the way the runtime would; null when it exited
 * 3, else why not (the first line of its stderr, or the error). The init's fd 4 is a scratch file
 * holding the handshake (spawnSync can feed only stdin).
 */
function probe(launcher: Launcher): string | null {
  const run = launcher.launch(SH, ["-c", "exit 3"], { PATH: "/usr/bin:/bin" }, 0);
  const dir = mkdtempSync(join(tmpdir(), "nerva-probe-"));
  const fd = openSync(join(dir, "fd4"), "w+");
  try {
    // A positional write leaves the offset at 0, where the init starts reading.
    if (run.handshake !== null) writeSync(fd, run.handshake, 0, run.handshake.length, 0);
    const result = spawnSync(run.command, run.args, {
      stdio: ["ignore", "ignore", "pipe", "ignore", fd],
      env: run.env,
      timeout: 5000,
      encoding: "utf8",
    });
    if (result.error !== undefined) return result.error.message;
    if (result.status === 3) return null;
    const said = (result.stderr ?? "").trim().split("\n")[0] ?? "";
    return said === "" ? `exit ${result.status ?? result.signal}` : said;
  } finally {
    closeSync(fd);
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * What the probe's program runs: exit 3 if it holds no capability at all (every capability set
 * in /proc/self/status is zero), else 4. Shell builtins only.
 */
const NO_CAPS_CHECK =
  "while IFS= read -r line; do case $line in Cap*:*[1-9a-f]*) exit 4;; esac; done < /proc/self/status; exit 3";

/**
 * Runs one call on a fork server of `launcher` the way the runtime would, checking that the
 * program ran without capabilities; null when it did, else why not. The control fd is a scratch
 * file holding the command, then the report; the calls' stdio is /dev/null.
 */
function probeForkServer(launcher: Launcher): string | null {
  if (launcher.forkServer === null) return `no system call table for ${process.arch}`;
  const run = launcher.forkServer(0);
  const command = encodeHandshake(SH, ["-c", NO_CAPS_CHECK], { PATH: "/usr/bin:/bin" });
  const dir = mkdtempSync(join(tmpdir(), "nerva-probe-"));
  const file = join(dir, "control");
  const fd = openSync(file, "w+");
  // Every call's fds must be open ("ignore" would leave them closed past fd 2).
  const devNull = openSync("/dev/null", "r+");
  try {
    writeSync(fd, command, 0, command.length, 0);
    const stdio: (number | "ignore" | "pipe")[] = ["ignore", "ignore", "pipe", fd];
    while (stdio.length < FIRST_CALL_FD + 4 * FORK_SERVER_CALLS) stdio.push(devNull);
    const result = spawnSync(run.command, run.args, {
      stdio,
      env: run.env,
      timeout: 5000,
      encoding: "utf8",
    });
    if (result.error !== undefined) return result.error.message;
    const report = readFileSync(file).subarray(command.length).toString("latin1");
    if (report === "0 X3\n") return null;
    if (report === "0 X4\n") return "a program it started kept capabilities";
    const said = (result.stderr ?? "").trim().split("\n")[0] ?? "";
    return said !== ""
      ? said
      : `reported ${JSON.stringify(report)}, exit ${result.status ?? result.signal}`;
  } finally {
    closeSync(fd);
    closeSync(devNull);
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * For tests: whether namespace modes start executables through fork servers where the machine
 * allows (else through a per-call init, the fallback).
 */
export const forkServers = { enabled: true };

const probed = new Map<ConfinementMode, Probed>();
let warned = false;

function detect(mode: ConfinementMode): Probed {
  const known = probed.get(mode);
  if (known !== undefined) return known;
  const result = detectUncached(mode);
  probed.set(mode, result);
  return result;
}

function detectUncached(mode: ConfinementMode): Probed {
  const fail = (reason: string): Probed => ({ launcher: null, reason });
  const tried = (launcher: Launcher): Probed => {
    const why = probe(launcher);
    if (why !== null) return fail(why);
    // A fork server that fails its probe leaves executables on the per-call init.
    return {
      launcher:
        launcher.forkServer === null || probeForkServer(launcher) === null
          ? launcher
          : { ...launcher, forkServer: null },
      reason: null,
    };
  };
  if (mode === Confinement.NONE) return { launcher: makeLauncher(mode, {}), reason: null };
  if (process.platform !== "linux") {
    return fail(`namespaces and capabilities are Linux features (this is ${process.platform})`);
  }
  const tools = { unshare: which("unshare"), setpriv: which("setpriv"), perl: which("perl") };
  const needs: Record<ConfinementMode, (keyof typeof tools)[]> = {
    [Confinement.USER_NAMESPACE]: ["unshare", "perl"],
    [Confinement.PID_NAMESPACE]: ["unshare", "setpriv", "perl"],
    [Confinement.CAPABILITIES]: ["setpriv"],
    [Confinement.NONE]: [],
  };
  const missing = needs[mode].filter((tool) => tools[tool] === null);
  if (missing.length > 0) {
    const pkg = (tool: string): string => (tool === "perl" ? "perl-base" : "util-linux");
    return fail(`${missing.map((t) => `${t} (${pkg(t)})`).join(" and ")} not on the PATH`);
  }
  const found = tools as Partial<LauncherTools>;
  if (mode !== Confinement.USER_NAMESPACE && process.getuid?.() !== 0) {
    return fail(
      "the host does not run as root (a process of the same user can read the host's environment whatever its capabilities; only a user namespace keeps it out)",
    );
  }
  if (mode !== Confinement.USER_NAMESPACE) return tried(makeLauncher(mode, found));
  // --map-current-user (util-linux 2.38) keeps the uid the handler sees; older versions only
  // have --map-root-user.
  let first: Probed | null = null;
  for (const userFlag of ["--map-current-user", "--map-root-user"]) {
    const result = tried(makeLauncher(mode, { ...found, userFlag }));
    if (result.launcher !== null) return result;
    first ??= result;
  }
  return first as Probed;
}

/**
 * The launcher for `requested`, detected once per process and cached. `auto` takes the strongest
 * mode available and warns once per process when that leaves a gap; an explicit mode that this
 * machine does not offer is an INVALID_OPTIONS error naming the reason.
 */
export function resolveConfinement(requested: Confinement): Launcher {
  if (requested !== Confinement.AUTO) {
    const found = detect(requested);
    if (found.launcher !== null) return withForkServers(found.launcher);
    throw new NervaError(
      ErrorCode.INVALID_OPTIONS,
      `Invalid options.confinement: "${requested}" is not available on this machine: ${found.reason}. Use "auto" (the strongest mechanism available) or "none".`,
      { issues: [{ path: "options.confinement", message: `not available: ${found.reason}` }] },
    );
  }
  const reasons: string[] = [];
  for (const mode of CHAIN) {
    const found = detect(mode);
    if (found.launcher === null) {
      reasons.push(`${mode}: ${found.reason}`);
      continue;
    }
    if (!found.launcher.killsDescendants) warnOnce(found.launcher.mode, reasons);
    return withForkServers(found.launcher);
  }
  return makeLauncher(Confinement.NONE, {});
}

function withForkServers(launcher: Launcher): Launcher {
  return forkServers.enabled || launcher.forkServer === null
    ? launcher
    : { ...launcher, forkServer: null };
}

function warnOnce(mode: ConfinementMode, reasons: readonly string[]): void {
  if (warned) return;
  warned = true;
  const gap =
    mode === Confinement.NONE
      ? "handler processes are not confined: a handler can read the host's launch environment (its secrets) through /proc/<host pid>/environ, and a process it starts in a new session (setsid) survives its timeout or cancel"
      : "handler processes run without capabilities (the host's environment is safe), but no PID namespace is available: a process a handler starts in a new session (setsid) survives its timeout or cancel";
  process.emitWarning(
    `SubprocessRuntime: ${gap}. Not available here: ${reasons.join("; ")}. Set confinement: "none" to accept this without a warning; see docs/subprocess-runtime.md#confinement.`,
    { code: "NERVA_SUBPROCESS_UNCONFINED" },
  );
}
