import { readdirSync, readFileSync } from "node:fs";
import {
  FORK_SERVER,
  FORK_SERVER_CALLS,
  forkServerArgs,
  syscallNumbers,
} from "./fork-server-script.js";
import { INIT, encodeHandshake } from "./init.js";

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
   * Under a namespace's init: the program, its arguments and environment, to write on the init's
   * socket (fd 4). `command`, `args` and `env` are then the same whatever the
   * program, so such a launcher can be started ahead of need.
   */
  readonly handshake: Buffer | null;
}

/** Starts programs under one confinement mode. */
export interface Launcher {
  readonly mode: ConfinementMode;
  /** Whether every process a handler starts is killed with it (a PID namespace). */
  readonly killsDescendants: boolean;
  /**
   * Whether the program runs under the namespace's init, which reports on fd 4
   * how it ended (see init.ts): the spawned process is not the program then.
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
  /**
   * How to start a fork server (fork-server-script.ts) in this mode's namespaces, under an
   * address-space limit (KiB, 0 for none); null where there is none (no namespace, a CPU
   * architecture without a table of system call numbers, or a machine where it failed its
   * probe): executables then start through a per-call init.
   */
  readonly forkServer: ((limitKb: number) => Launch) | null;
}

/** Paths of the programs the launchers use (absolute). */
export interface LauncherTools {
  readonly unshare: string;
  readonly setpriv: string;
  readonly perl: string;
  /** `--map-current-user`, or `--map-root-user` where util-linux is older than 2.38. */
  readonly userFlag: string;
}

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
 * The namespaces of a fork server: unshare does not fork (the process it becomes would hold
 * every call's stdio); the server forks its namespace's init and mounts its /proc itself.
 */
export const SERVER_NS: readonly string[] = ["--mount", "--propagation", "slave", "--pid"];

/** `argv` under an address-space limit (a shell applying `ulimit -v`), or as is. */
function limited(argv: readonly string[], limitKb: number): string[] {
  return limitKb > 0 ? [SH, "-c", `ulimit -v ${limitKb} && exec "$0" "$@"`, ...argv] : [...argv];
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
      const user = ["--user", tools.userFlag ?? "--map-current-user"];
      const prefix =
        mode === Confinement.USER_NAMESPACE
          ? [...user, ...PID_NS, "--"]
          : [...PID_NS, "--", setpriv, ...DROP_CAPS, "--"];
      // The server needs its capabilities to mount /proc (kept across exec for a mapped
      // non-root user by --keep-caps); the programs it forks run without any.
      const serverPrefix =
        mode === Confinement.USER_NAMESPACE
          ? [...user, "--keep-caps", ...SERVER_NS, "--"]
          : [...SERVER_NS, "--"];
      const numbers = syscallNumbers();
      const server = [perl, "-e", FORK_SERVER];
      return {
        mode,
        killsDescendants: true,
        hasInit: true,
        launch: (file, args, env, limitKb) => ({
          command: unshare,
          args: [...prefix, ...limited([perl, "-e", INIT], limitKb)],
          env: {},
          handshake: encodeHandshake(file, args, env),
        }),
        forkServer:
          numbers === null
            ? null
            : (limitKb) => ({
                command: unshare,
                args: [
                  ...serverPrefix,
                  ...limited([...server, ...forkServerArgs(FORK_SERVER_CALLS, numbers)], limitKb),
                ],
                env: {},
                handshake: null,
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
        forkServer: null,
      };
    case Confinement.NONE:
      return {
        mode,
        killsDescendants: false,
        hasInit: false,
        launch: (file, args, env, limitKb) => plain(limited([file, ...args], limitKb), env),
        forkServer: null,
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
