import { spawnSync } from "node:child_process";
import {
  accessSync,
  closeSync,
  constants,
  mkdtempSync,
  openSync,
  rmSync,
  writeSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, isAbsolute, join } from "node:path";
import { ErrorCode, NervaError } from "../../errors.js";
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
    return why === null ? { launcher, reason: null } : fail(why);
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
    if (found.launcher !== null) return found.launcher;
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
    return found.launcher;
  }
  return makeLauncher(Confinement.NONE, {});
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
