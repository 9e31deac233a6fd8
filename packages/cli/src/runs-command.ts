import { ErrorCode, NervaError, RunQueue, type RunRecord, type RunStore } from "@nerva/core";
import type { CliIo } from "./cli.js";

type Values = Record<string, string | boolean | undefined>;

async function openStore(values: Values): Promise<RunStore> {
  const where = values.store;
  if (typeof where !== "string") {
    throw new NervaError(
      ErrorCode.INVALID_INPUT,
      "--store is required: the SQLite file of the queue (e.g. --store runs.db) or its Redis URL (e.g. --store redis://127.0.0.1:6379).",
    );
  }
  if (/^rediss?:\/\//.test(where)) {
    const { RedisRunStore } = await import("@nerva/core/redis");
    const prefix = values.prefix;
    return new RedisRunStore(typeof prefix === "string" ? { url: where, prefix } : { url: where });
  }
  const { SqliteRunStore } = await import("@nerva/core/sqlite");
  return new SqliteRunStore({ path: where });
}

function line(run: RunRecord): string {
  const at = new Date(run.createdAt).toISOString();
  const pause =
    run.pause === null ? "" : ` waiting at ${run.pause.key}: ${run.pause.prompt ?? run.pause.kind}`;
  return `${run.id}  ${run.status.padEnd(9)}  ${run.handlers.join(",")}  ${run.input.args.entryPoint ?? ""}  ${at}${pause}`;
}

/** `nerva runs list|show|events|resume|cancel`. */
export async function runsCommand(
  args: readonly string[],
  values: Values,
  io: CliIo,
): Promise<number> {
  const [sub, id] = args;
  const store = await openStore(values);
  try {
    const queue = new RunQueue({
      store,
      name: typeof values.queue === "string" ? values.queue : "default",
    });
    const need = (): string => {
      if (id === undefined)
        throw new NervaError(ErrorCode.INVALID_INPUT, `nerva runs ${sub} needs a run id.`);
      return id;
    };
    switch (sub) {
      case "list": {
        const page = await queue.list({
          ...(typeof values.status === "string"
            ? { status: values.status as RunRecord["status"] }
            : {}),
          limit: typeof values.limit === "string" ? Number(values.limit) : 50,
        });
        for (const run of page.runs) io.stdout.write(`${line(run)}\n`);
        if (page.runs.length === 0) io.stdout.write(`no runs in queue "${queue.name}"\n`);
        return 0;
      }
      case "show": {
        const run = await queue.get(need());
        if (run === null) throw new NervaError(ErrorCode.NOT_FOUND, `No run ${need()}.`);
        io.stdout.write(`${JSON.stringify(run, null, 2)}\n`);
        return 0;
      }
      case "events": {
        const runId = need();
        const after = typeof values.after === "string" ? Number(values.after) : 0;
        if (values.follow === true) {
          for await (const e of queue.events(runId, { afterSeq: after })) {
            io.stdout.write(`${e.seq}\t${e.type}\t${JSON.stringify(e.data)}\n`);
          }
        } else {
          for (const e of await store.readEvents(runId, after, 100_000)) {
            io.stdout.write(`${e.seq}\t${e.type}\t${JSON.stringify(e.data)}\n`);
          }
        }
        return 0;
      }
      case "resume": {
        if (typeof values.value !== "string") {
          throw new NervaError(
            ErrorCode.INVALID_INPUT,
            "nerva runs resume needs --value JSON (the answer).",
          );
        }
        let value: unknown;
        try {
          value = JSON.parse(values.value);
        } catch {
          value = values.value;
        }
        const run = await queue.resume(
          need(),
          value,
          typeof values.key === "string" ? { key: values.key } : {},
        );
        io.stdout.write(`${line(run)}\n`);
        return 0;
      }
      case "cancel": {
        const run = await queue.cancel(
          need(),
          typeof values.reason === "string" ? { reason: values.reason } : {},
        );
        io.stdout.write(`${line(run)}\n`);
        return 0;
      }
      default:
        throw new NervaError(
          ErrorCode.INVALID_INPUT,
          `nerva runs: unknown subcommand "${sub}" (list, show, events, resume, cancel).`,
        );
    }
  } finally {
    await store.close();
  }
}
