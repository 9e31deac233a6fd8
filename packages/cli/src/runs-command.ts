import {
  ErrorCode,
  NervaError,
  RunQueue,
  RunStatus,
  type RunRecord,
  type RunStore,
} from "@nerva/core";
import type { CliIo } from "./cli.js";
import { answerFlag, checkFlags, intFlag, oneOfFlag, textFlag, type Values } from "./flags.js";
import { resumeChecked } from "./resume.js";
import { SESSION_KEY_HANDLER, isRedisUrl, openStore, sqliteQueues } from "./store.js";

/** A run as one line of `nerva runs list`. */
export function runLine(run: RunRecord): string {
  const at = new Date(run.createdAt).toISOString();
  const pause =
    run.pause === null ? "" : ` waiting at ${run.pause.key}: ${run.pause.prompt ?? run.pause.kind}`;
  return `${run.id}  ${run.status.padEnd(9)}  ${run.handlers.join(",")}  ${run.input.args.entryPoint ?? ""}  ${at}${pause}`;
}

const SUBCOMMANDS = ["list", "show", "events", "resume", "cancel"];

/** `nerva runs list|show|events|resume|cancel`. */
export async function runsCommand(
  args: readonly string[],
  values: Values,
  io: CliIo,
): Promise<number> {
  const [sub, ...rest] = args;
  if (sub === undefined || !SUBCOMMANDS.includes(sub)) {
    throw new NervaError(
      ErrorCode.INVALID_INPUT,
      sub === undefined
        ? `nerva runs needs a subcommand (${SUBCOMMANDS.join(", ")}).`
        : `nerva runs: unknown subcommand "${sub}" (${SUBCOMMANDS.join(", ")}).`,
    );
  }
  checkFlags(`runs ${sub}`, values, rest, sub === "list" ? [] : ["a run id"]);
  // Every flag is checked before the store is opened.
  const status = oneOfFlag(values, "status", Object.values(RunStatus));
  const limit = intFlag(values, "limit", 1, 1000, 50);
  const after = intFlag(values, "after", 0, Number.MAX_SAFE_INTEGER, 0);
  textFlag(values, "queue", /^[A-Za-z0-9_.-]{1,64}$/, "1-64 letters, digits, '_', '.' or '-'");
  textFlag(values, "reason", /^[\s\S]{0,1000}$/, "at most 1000 characters");
  textFlag(values, "key", /^.+$/s, "the pause key the run waits for (not empty)");
  if (sub === "resume" && typeof values.value !== "string") {
    throw new NervaError(
      ErrorCode.INVALID_INPUT,
      "nerva runs resume needs --value JSON (the answer).",
    );
  }
  const store = await openStore(values);
  try {
    const id = rest[0] as string;
    const queue = new RunQueue({
      store,
      name: typeof values.queue === "string" ? values.queue : "default",
    });
    if (sub !== "list") {
      // The record keeping a runtime's session key is the store's own, not a run: it is never
      // shown (it holds the key that signs sessionStates), followed, answered or cancelled.
      const run = await queue.get(id);
      if (run === null || run.handlers[0] === SESSION_KEY_HANDLER) {
        throw new NervaError(ErrorCode.NOT_FOUND, `No run ${id} in this store.`);
      }
    }
    switch (sub) {
      case "list":
        return await list(store, values, { status, limit }, io);
      case "show": {
        const run = await queue.get(id);
        if (run === null) throw new NervaError(ErrorCode.NOT_FOUND, `No run ${id} in this store.`);
        io.stdout.write(`${JSON.stringify(run, null, 2)}\n`);
        return 0;
      }
      case "events":
        return await events(queue, id, after, values.follow === true, io);
      case "resume": {
        const run = await resumeChecked(queue, id, answerFlag(values.value as string), values);
        io.stdout.write(`${runLine(run)}\n`);
        return 0;
      }
      default: {
        const run = await queue.cancel(
          id,
          typeof values.reason === "string" ? { reason: values.reason } : {},
        );
        io.stdout.write(`${runLine(run)}\n`);
        return 0;
      }
    }
  } finally {
    await store.close();
  }
}

async function list(
  store: RunStore,
  values: Values,
  filter: { status: RunRecord["status"] | undefined; limit: number },
  io: CliIo,
): Promise<number> {
  const where = values.store as string;
  const queues = isRedisUrl(where) ? null : await sqliteQueues(where);
  const page = async (name: string) =>
    (
      await new RunQueue({ store, name }).list({
        ...(filter.status === undefined ? {} : { status: filter.status }),
        limit: filter.limit,
      })
    ).runs.filter((r) => r.handlers[0] !== SESSION_KEY_HANDLER);
  if (typeof values.queue === "string") {
    const runs = await page(values.queue);
    for (const run of runs) io.stdout.write(`${runLine(run)}\n`);
    if (runs.length === 0) {
      const others = (queues ?? []).map((q) => q.name).filter((q) => q !== values.queue);
      io.stdout.write(
        `no runs in queue "${values.queue}"${others.length === 0 ? "" : ` (queues with runs: ${others.join(", ")})`}\n`,
      );
    }
    return 0;
  }
  if (queues === null) {
    throw new NervaError(
      ErrorCode.INVALID_INPUT,
      "nerva runs list needs --queue with a Redis store (the queue of a graph's entry point is <graph>.<entry point>, e.g. refund_desk.default).",
    );
  }
  let shown = 0;
  for (const q of queues) {
    const runs = await page(q.name);
    if (runs.length === 0) continue;
    io.stdout.write(`queue ${q.name} (${q.runs} run${q.runs === 1 ? "" : "s"})\n`);
    for (const run of runs) io.stdout.write(`${runLine(run)}\n`);
    shown += runs.length;
  }
  if (shown === 0) io.stdout.write(`no runs in ${where}\n`);
  return 0;
}

async function events(
  queue: RunQueue,
  id: string,
  after: number,
  follow: boolean,
  io: CliIo,
): Promise<number> {
  const print = (e: { seq: number; type: string; data: unknown }) =>
    io.stdout.write(`${e.seq}\t${e.type}\t${JSON.stringify(e.data)}\n`);
  if (follow) {
    for await (const e of queue.events(id, { afterSeq: after })) print(e);
    return 0;
  }
  if ((await queue.get(id)) === null) {
    throw new NervaError(ErrorCode.NOT_FOUND, `No run ${id} in this store.`);
  }
  // The whole history as it was when asked, named as every reader sees it: nothing cut off.
  for await (const e of queue.events(id, { afterSeq: after, follow: false })) print(e);
  return 0;
}
