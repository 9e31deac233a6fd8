import { existsSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { createInterface } from "node:readline/promises";
import { RunEventType, NervaError, ErrorCode } from "@nerva/core";
import { AgentRunner } from "./agent-runner.js";
import { importAgentModule, sqliteOnly } from "./agent-module.js";
import type { CliIo } from "./cli.js";
import { answerFlag, checkFlags, jsonObjectFlag, shellWord, type Values } from "./flags.js";
import { Progress } from "./progress.js";

/** Reads answers line by line from stdin (interactive or piped). */
function answers(io: CliIo): {
  ask: (prompt: string) => Promise<string | null>;
  close: () => void;
} {
  const rl = createInterface({
    input: io.stdin,
    output: io.stdout,
    terminal: io.stdin.isTTY === true,
  });
  const lines: string[] = [];
  let ended = false;
  const waiting: ((line: string | null) => void)[] = [];
  rl.on("line", (line) => {
    const w = waiting.shift();
    if (w !== undefined) w(line);
    else lines.push(line);
  });
  rl.on("close", () => {
    ended = true;
    for (const w of waiting.splice(0)) w(null);
  });
  return {
    ask: (prompt) => {
      io.stdout.write(`? ${prompt} `);
      const line = lines.shift();
      if (line !== undefined) {
        if (io.stdin.isTTY !== true) io.stdout.write(`${line}\n`);
        return Promise.resolve(line);
      }
      if (ended) return Promise.resolve(null);
      return new Promise((resolve) => waiting.push(resolve));
    },
    close: () => rl.close(),
  };
}

/** What to say when a run waits for input and stdin has no answer. */
function noAnswer(
  id: string,
  node: string,
  module: string,
  store: string | boolean | undefined,
  runner: AgentRunner,
): string {
  const configured = runner.module.config?.store;
  const file =
    typeof store === "string"
      ? store
      : typeof configured === "object" && configured !== null
        ? configured.sqlite
        : null;
  const waits = `run ${id} waits for input at "${node}" and stdin has no answer.`;
  if (file === null) {
    return `${waits} Answer interactively or pipe the answer; to answer later, run it with --store runs.db (without one its runs live in memory and end with this process).`;
  }
  return `${waits} Answer interactively, pipe the answer, or later: nerva runs resume ${id} --store ${shellWord(file)} --value JSON --module ${shellWord(module)}`;
}

/** `nerva run <module>`: runs the module's graph, streaming output and asking for input. */
export async function runCommand(
  args: readonly string[],
  values: Values,
  io: CliIo,
): Promise<number> {
  checkFlags("run", values, args, ["the path of an agent module"]);
  const path = args[0] as string;
  const input = jsonObjectFlag(values, "input");
  sqliteOnly("run", values.store);
  if (typeof values.store === "string" && !existsSync(dirname(resolve(values.store)))) {
    throw new NervaError(
      ErrorCode.INVALID_INPUT,
      `--store ${shellWord(values.store)}: its folder does not exist (nerva run creates the file, not the folder).`,
    );
  }
  await importAgentModule(path);
  const runner = await AgentRunner.load(
    path,
    typeof values.store === "string" ? { store: { sqlite: values.store } } : {},
  );
  const progress = new Progress(io);
  const reader = answers(io);
  try {
    const entry = typeof values.entry === "string" ? values.entry : undefined;
    const id = await runner.trigger(entry ?? runner.getEntryPoints()[0]?.id ?? "default", input);
    io.stderr.write(`[nerva] run ${id}\n`);
    for await (const e of runner.runtime.events(id)) {
      if (e.type === RunEventType.NODE_STARTED) progress.node(String(e.data.node));
      else if (e.type === RunEventType.NODE_COMPLETED) progress.completed();
      else if (e.type === RunEventType.OUTPUT_DELTA) {
        progress.output(String(e.data.chunk));
      } else if (e.type === RunEventType.PAUSED) {
        progress.stop();
        progress.breakLine();
        const paused = await runner.runtime.get(id);
        if (paused?.status !== "paused" || paused.pausedAt === null) continue;
        // Ask until the node takes the answer (a wrong one is refused with the reason).
        for (;;) {
          const line = await reader.ask(paused.pause?.prompt ?? `Input for ${paused.pausedAt}:`);
          if (line === null) {
            io.stdout.write("\n");
            io.stderr.write(
              `nerva: ${noAnswer(id, paused.pausedAt, path, values.store, runner)}\n`,
            );
            return 2;
          }
          try {
            await runner.runtime.resume(id, answerFlag(line));
            break;
          } catch (err) {
            io.stderr.write(`nerva: ${(err as Error).message}\n`);
          }
        }
      }
    }
    progress.stop();
    const done = await runner.runtime.get(id);
    if (done?.status === "succeeded") {
      io.stdout.write(
        `\n${typeof done.output === "string" ? done.output : JSON.stringify(done.output)}\n`,
      );
      return 0;
    }
    progress.breakLine();
    io.stderr.write(`nerva: run ${id} ended ${done?.status}: ${done?.error?.message ?? ""}\n`);
    return 1;
  } finally {
    progress.stop();
    reader.close();
    await runner.cleanup();
  }
}
