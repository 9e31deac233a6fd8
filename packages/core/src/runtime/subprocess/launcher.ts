import { readdirSync, readFileSync } from "node:fs";
import { constants as osConstants } from "node:os";

/**
 * How `SubprocessRuntime` confines the processes it starts (docs/subprocess-runtime.md,
 * "Confinement"). From strongest to weakest:
 * - `user-namespace`: each process in its own user namespace (it cannot read the environment or
 *   memory of any process outside it, the host's included) and its own PID namespace with a
 *   private /proc (which lists only its own processes; a timeout or cancel kills every process in
 *   it, `setsid` or not). Any user.
 * - `pid-namespace`: the same PID namespace, and the process runs without capabilities (root
 *   only, for machines that allow no user namespace).
 * - `capabilities`: without capabilities only (root only): the environment is protected, but a
 *   process that leaves the process group (`setsid`) can outlive a kill.
 * - `none`: plain child processes.
 * `auto` (the default) picks the strongest one this machine offers.
 *
 * @example
 * const runtime = new SubprocessRuntime({ handlerDir: "./agents", confinement: Confinement.AUTO });
 * if (runtime.confinement === Confinement.NONE) console.warn("handlers are not confined");
 */
export const Confinement = {
  AUTO: "auto",
  USER_NAMESPACE: "user-namespace",
  PID_NAMESPACE: "pid-namespace",
  CAPABILITIES: "capabilities",
  NONE: "none",
} as const;
export type Confinement = (typeof Confinement)[keyof typeof Confinement];
/** A mechanism actually in use (what `auto` resolved to). */
export type ConfinementMode = Exclude<Confinement, "auto">;

/** How to start one program: what to spawn, with which environment, and what to send the init. */
export interface Launch {
  readonly command: string;
  readonly args: string[];
  readonly env: Record<string, string>;
  /**
   * Under a namespace's init: the program's environment, to write on fd {@link STATUS_FD} right
   * after the spawn (the init itself starts with an empty environment, so nothing in the
   * program's, such as `PERL5OPT` or a locale perl lacks, can change how the init runs).
   */
  readonly handshake: Buffer | null;
}

/** Starts programs under one confinement mode. */
export interface Launcher {
  readonly mode: ConfinementMode;
  /** Whether every process a handler starts is killed with it (a PID namespace). */
  readonly killsDescendants: boolean;
  /**
   * Whether the program runs under the namespace's init, which reports on fd {@link STATUS_FD}
   * how it ended (see {@link parseInitReport}): the spawned process is not the program then.
   */
  readonly hasInit: boolean;
  /**
   * How to run `file args` with `env`, confined, under an address-space limit (`ulimit -v`, in
   * KiB; 0 for none). Unconfined and unlimited, that is `file` itself.
   */
  launch(
    file: string,
    args: readonly string[],
    env: Readonly<Record<string, string>>,
    limitKb: number,
  ): Launch;
}

/** Paths of the programs the launchers use (absolute). */
export interface LauncherTools {
  readonly unshare: string;
  readonly setpriv: string;
  readonly perl: string;
  /** `--map-current-user`, or `--map-root-user` where util-linux is older than 2.38. */
  readonly userFlag: string;
}

/** The fd on which the init of a namespace reports how the program ended. */
export const STATUS_FD = 4;

export const SH = "/bin/sh";
/** Drops every capability for good: none effective, none inheritable, none gained by exec. */
export const DROP_CAPS: readonly string[] = ["--bounding-set=-all", "--inh-caps=-all"];
/**
 * A new PID namespace whose first process (PID 1) is the init below, with a private /proc that
 * shows only the namespace's processes; if the launcher is killed, so is the init.
 */
export const PID_NS: readonly string[] = [
  "--pid",
  "--fork",
  "--kill-child",
  "--mount-proc",
  "--propagation",
  "slave",
];

/**
 * PID 1 of the namespace, in perl (every Debian-like system has it: perl-base is essential). It
 * reads the program's environment from fd 4 (`NAME=value` items, each ended by a NUL, then one
 * more NUL), runs the program as PID 2, so the program keeps normal signal semantics (PID 1
 * ignores every signal it has no handler for, even a SIGKILL or SIGSEGV it sends itself), reaps
 * orphans, and reports on fd 4 what only it can see: `S<n>` when the program was killed by signal
 * n (PID 1 cannot die of it to pass it on), `E<errno>` when it could not be executed. When the
 * program ends, the init exits and the kernel kills everything left in the namespace.
 */
export const INIT = [
  '$0 = "nerva-init";',
  'open(my $st, "+<&=", 4) or die "nerva-init: no status fd: $!\\n";',
  'my $spec = "";',
  "until ($spec =~ /(?:\\A|\\0)\\0\\z/) {",
  '  sysread($st, $spec, 65536, length $spec) or die "nerva-init: no environment\\n";',
  "}",
  "%ENV = map { /\\A([^=]*)=(.*)\\z/s ? ($1, $2) : () } split /\\0/, substr($spec, 0, -1);",
  'my $pid = fork() // die "nerva-init: fork: $!\\n";',
  "if ($pid == 0) {",
  // F_SETFD, FD_CLOEXEC: the program does not inherit the status fd.
  "  fcntl($st, 2, 1);",
  "  { exec { $ARGV[0] } @ARGV }",
  '  syswrite($st, "E" . ($! + 0) . "\\n");',
  "  exit 127;",
  "}",
  // The program's stdio is the program's: held here too, its end would wait for this process.
  'close(STDIN); close(STDOUT); close(STDERR); open(my $ch, "<&=", 3) && close($ch);',
  "my $status = 0;",
  "while ((my $w = wait()) != -1) { if ($w == $pid) { $status = $?; last } }",
  'if ($status & 127) { syswrite($st, "S" . ($status & 127) . "\\n"); exit 128 + ($status & 127) }',
  "exit($status >> 8);",
].join("\n");

/** What the init reported: the signal that killed the program, or why it could not start. */
export interface InitReport {
  readonly signal?: NodeJS.Signals;
  /** An errno code such as `ENOENT`, `EACCES`, `ENOEXEC`. */
  readonly execError?: string;
}

const SIGNAL_NAMES = new Map<number, NodeJS.Signals>(
  Object.entries(osConstants.signals).map(([name, n]) => [n, name as NodeJS.Signals]),
);
const ERRNO_NAMES = new Map<number, string>(
  Object.entries(osConstants.errno).map(([name, n]) => [n, name]),
);

/** Reads what the init wrote on its status fd (nothing when the program exited normally). */
export function parseInitReport(text: string): InitReport {
  const m = /^([SE])(\d+)$/m.exec(text);
  if (m === null) return {};
  const n = Number(m[2]);
  if (m[1] === "S") {
    const signal = SIGNAL_NAMES.get(n);
    return signal === undefined ? {} : { signal };
  }
  return { execError: ERRNO_NAMES.get(n) ?? `errno ${n}` };
}

/** `argv` under an address-space limit (a shell applying `ulimit -v`), or as is. */
function limited(argv: readonly string[], limitKb: number): string[] {
  return limitKb > 0 ? [SH, "-c", `ulimit -v ${limitKb} && exec "$0" "$@"`, ...argv] : [...argv];
}

/** The environment as the init reads it (see {@link INIT}). */
function encodeEnv(env: Readonly<Record<string, string>>): Buffer {
  let text = "";
  for (const [name, value] of Object.entries(env)) text += `${name}=${value}\0`;
  return Buffer.from(`${text}\0`);
}

/** The launcher of `mode`; `tools` must hold what that mode needs (checked by detection). */
export function makeLauncher(mode: ConfinementMode, tools: Partial<LauncherTools>): Launcher {
  const { unshare = "unshare", setpriv = "setpriv", perl = "perl" } = tools;
  const plain = (argv: string[], env: Readonly<Record<string, string>>): Launch => ({
    command: argv[0] as string,
    args: argv.slice(1),
    env: { ...env },
    handshake: null,
  });
  switch (mode) {
    case Confinement.USER_NAMESPACE:
    case Confinement.PID_NAMESPACE: {
      const prefix =
        mode === Confinement.USER_NAMESPACE
          ? ["--user", tools.userFlag ?? "--map-current-user", ...PID_NS, "--"]
          : [...PID_NS, "--", setpriv, ...DROP_CAPS, "--"];
      return {
        mode,
        killsDescendants: true,
        hasInit: true,
        launch: (file, args, env, limitKb) => ({
          command: unshare,
          args: [...prefix, ...limited([perl, "-e", INIT, file, ...args], limitKb)],
          env: {},
          handshake: encodeEnv(env),
        }),
      };
    }
    case Confinement.CAPABILITIES:
      return {
        mode,
        killsDescendants: false,
        hasInit: false,
        launch: (file, args, env, limitKb) =>
          plain([setpriv, ...DROP_CAPS, "--", ...limited([file, ...args], limitKb)], env),
      };
    case Confinement.NONE:
      return {
        mode,
        killsDescendants: false,
        hasInit: false,
        launch: (file, args, env, limitKb) => plain(limited([file, ...args], limitKb), env),
      };
  }
}

/**
 * The children of `pid` (of all its threads), from /proc on Linux; empty elsewhere or once the
 * process is gone. Finds what a worker's handler left running.
 */
export function childPids(pid: number): number[] {
  const pids: number[] = [];
  let tasks: string[];
  try {
    tasks = readdirSync(`/proc/${pid}/task`);
  } catch {
    return pids;
  }
  for (const task of tasks) {
    let text: string;
    try {
      text = readFileSync(`/proc/${pid}/task/${task}/children`, "utf8");
    } catch {
      continue;
    }
    for (const word of text.split(" ")) if (word.trim() !== "") pids.push(Number(word));
  }
  return pids;
}
