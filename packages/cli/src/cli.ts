import { parseArgs } from "node:util";
import { isNervaError } from "@nerva/core";
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
  nerva dashboard <agent module> [--store runs.db] [--port 4300]
  nerva runs list   --store runs.db --queue name [--status s] [--limit n]
  nerva runs show   <id> --store runs.db
  nerva runs events <id> --store runs.db [--after seq] [--follow]
  nerva runs resume <id> --store runs.db --value JSON [--key key]
  nerva runs cancel <id> --store runs.db [--reason text]

--store is a SQLite file, or a Redis URL (redis://host:port) for a queue on RedisRunStore; with
Redis, --prefix names the key prefix the app's store uses (default "nerva").`;

/** Exit codes: 0 done, 1 the execution failed, 2 bad usage or input. */
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
        help: { type: "boolean", short: "h" },
      },
    });
  } catch (err) {
    io.stderr.write(`nerva: ${(err as Error).message}\n\n${USAGE}\n`);
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
    io.stderr.write(`nerva: unknown command "${command}"\n\n${USAGE}\n`);
    return 2;
  } catch (err) {
    const text = isNervaError(err)
      ? `${err.code}: ${err.message}`
      : String((err as Error)?.message ?? err);
    io.stderr.write(`nerva: ${text}\n`);
    return 2;
  }
}
