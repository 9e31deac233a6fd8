import { AgentRunner, ErrorCode, NervaError } from "@nerva/core";
import type { CliIo } from "./cli.js";
import { startDashboard } from "./dashboard/server.js";
import { typescriptLoader } from "./run-command.js";

type Values = Record<string, string | boolean | undefined>;

/** `nerva dashboard <module>`: runs the module's graph runtime and serves its runs dashboard. */
export async function dashboardCommand(
  args: readonly string[],
  values: Values,
  io: CliIo,
): Promise<number> {
  const [path] = args;
  if (path === undefined)
    throw new NervaError(
      ErrorCode.INVALID_INPUT,
      "nerva dashboard needs the path of an agent module.",
    );
  await typescriptLoader(path);
  const runner = await AgentRunner.load(
    path,
    typeof values.store === "string" ? { store: { sqlite: values.store } } : {},
  );
  await runner.start();
  const dashboard = await startDashboard(runner.runtime, runner.queue.store, {
    port: typeof values.port === "string" ? Number(values.port) : 4300,
  });
  io.stdout.write(
    `Runs dashboard of ${runner.runtime.graph.name}: ${dashboard.url} (Ctrl-C stops it)\n`,
  );
  await new Promise<void>((resolve) => {
    process.once("SIGINT", resolve);
    process.once("SIGTERM", resolve);
  });
  await dashboard.close();
  await runner.cleanup();
  return 0;
}
