import { parseArgs } from "node:util";
import { ErrorCode, isNervaError } from "@nerva/core";
import { dashboardCommand } from "./dashboard-command.js";
import { runCommand } from "./run-command.js";
import { runsCommand } from "./runs-command.js";

/** The streams a command reads and writes. */
export interface CliIo {
  readonly stdin: NodeJS.ReadableStream & { isTTY?: boolean };
  readonly stdout: NodeJS.WritableStream & { isTTY?: boolean };
  readonly stderr: NodeJS.WritableStream & { isTTY?: boolean };
}

const USAGE = `Usage:
  nerva run <agent module> [--input JSON] [--entry id] [--store runs.db]
  nerva dashboard <agent module> [--store runs.db] [--port 4300] [--workers]
  nerva runs list   --store runs.db [--queue name] [--status s] [--limit n]
  nerva runs show   <id> --store runs.db
  nerva runs events <id> --store runs.db [--after seq] [--follow]
  nerva runs resume <id> --store runs.db --value JSON [--module agent.ts] [--key key]
  nerva runs cancel <id> --store runs.db [--reason text]

--store is a SQLite file that exists (nerva run creates it), or a Redis URL (redis://host:port)
for a queue on RedisRunStore; with Redis, --prefix names the key prefix the app's store uses
(default "nerva"). A graph's queues are <graph>.<entry point>; without --queue, runs list shows
every queue of a SQLite file. Resuming a run of a graph takes its agent module (--module),
whose schema checks the answer. The dashboard executes runs only with --workers.`;

/** Codes that say the environment failed, not the command line. */
const NOT_USAGE = new Set<string>([ErrorCode.UNAVAILABLE, ErrorCode.INTERNAL]);

/** An error as one line: its code and the first line of its message, never a stack. */
function errorLine(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  const first = message.split("\n").find((l) => l.trim() !== "") ?? "failed";
  return isNervaError(err) ? `${err.code}: ${first}` : first;
}

/** 2 for bad usage or input (a typed refusal), 1 for anything else that failed. */
function exitCode(err: unknown): number {
  return isNervaError(err) && !NOT_USAGE.has(err.code) ? 2 : 1;
}

/**
 * Runs one command line. Exit codes: 0 done, 1 the run (or the environment: a port in use,
 * an unreachable store) failed, 2 bad usage or input. Every error is one line on stderr.
 */
export async function main(argv: readonly string[], io: CliIo): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: [...argv],
      allowPositionals: true,
      options: {
        input: { type: "string" },
        entry: { type: "string" },
        store: { type: "string" },
        prefix: { type: "string" },
        queue: { type: "string" },
        status: { type: "string" },
        limit: { type: "string" },
        after: { type: "string" },
        follow: { type: "boolean" },
        value: { type: "string" },
        key: { type: "string" },
        reason: { type: "string" },
        port: { type: "string" },
        module: { type: "string" },
        workers: { type: "boolean" },
        help: { type: "boolean", short: "h" },
      },
    });
  } catch (err) {
    const message = (err as Error).message.replaceAll(/\s*\n\s*/g, " ");
    io.stderr.write(`nerva: ${message} (nerva --help shows the usage)\n`);
    return 2;
  }
  const [command, ...rest] = parsed.positionals;
  if (parsed.values.help === true || command === undefined) {
    io.stdout.write(`${USAGE}\n`);
    return command === undefined && parsed.values.help !== true ? 2 : 0;
  }
  try {
    if (command === "run") return await runCommand(rest, parsed.values, io);
    if (command === "runs") return await runsCommand(rest, parsed.values, io);
    if (command === "dashboard") return await dashboardCommand(rest, parsed.values, io);
    io.stderr.write(
      `nerva: unknown command "${command}" (run, runs, dashboard; nerva --help shows the usage)\n`,
    );
    return 2;
  } catch (err) {
    io.stderr.write(`nerva: ${errorLine(err)}\n`);
    return exitCode(err);
  }
}
