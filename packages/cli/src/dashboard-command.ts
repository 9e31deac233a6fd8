import { randomBytes } from "node:crypto";
import { AgentRunner } from "./agent-runner.js";
import { configuredFile, importAgentModule, sqliteOnly } from "./agent-module.js";
import type { CliIo } from "./cli.js";
import { startDashboard } from "./dashboard/server.js";
import { checkFlags, intFlag, type Values } from "./flags.js";
import { sqliteQueues } from "./store.js";

/**
 * `nerva dashboard <module>`: serves the runs dashboard of the module's graph. It only views
 * (and triggers or answers when a person asks) unless `--workers` makes it execute runs too.
 */
export async function dashboardCommand(
  args: readonly string[],
  values: Values,
  io: CliIo,
): Promise<number> {
  checkFlags("dashboard", values, args, ["the path of an agent module"]);
  const port = intFlag(values, "port", 0, 65_535, 4300);
  const path = args[0] as string;
  sqliteOnly("dashboard", values.store);
  const mod = await importAgentModule(path);
  // A viewer never creates a database: the file must exist and hold runs.
  const file = typeof values.store === "string" ? values.store : configuredFile(mod);
  if (file !== null) await sqliteQueues(file);
  const runner = await AgentRunner.load(path, {
    ...(typeof values.store === "string" ? { store: { sqlite: values.store } } : {}),
    // The page never shows a sessionState: a key of this process's own keeps the runtime from
    // writing one into the store the first time it reads a paused run.
    sessionKey: randomBytes(32).toString("base64url"),
  });
  try {
    if (values.workers === true) await runner.start();
    const dashboard = await startDashboard(runner.runtime, runner.queue.store, { port });
    const queues = [...new Set(runner.getEntryPoints().map((e) => e.queue))].join(", ");
    io.stdout.write(
      `Runs dashboard of ${runner.runtime.graph.name}: ${dashboard.url} (Ctrl-C stops it)\n${
        values.workers === true
          ? `It executes the runs of its queues (${queues}) in this process, with this process's environment (--workers).`
          : `It does not execute runs: what is triggered or answered here waits for a worker of the app (start one with --workers).`
      }\n`,
    );
    await new Promise<void>((done) => {
      process.once("SIGINT", done);
      process.once("SIGTERM", done);
    });
    await dashboard.close();
    return 0;
  } finally {
    await runner.cleanup();
  }
}
