import { ExecContext } from "../../context/exec-context.js";
import { z } from "zod";
import { ErrorCode, NervaError, parseOrThrow } from "../../errors.js";
import { checkUntrustedJson } from "../../internal/json-limits.js";
import { isEmptyObject } from "../../internal/object-options.js";
import { toJsonText } from "../../runs/json-value.js";
import type { RunQueue } from "../../runs/run-queue.js";
import { RunStatus, type RunRecord } from "../../runs/types.js";
import { checkBacklog, type Stream } from "./entry-streams.js";
import type { EntryPoint } from "./entry-points.js";
import type { RunEvent } from "../../runs/types.js";
import type { RunWatcher } from "./run-watcher.js";
import type { GraphExecutor } from "../execute/executor.js";
import { FIX_STATE, planStart } from "./session-start.js";
import type { Graph } from "../define/types.js";

/** Per-call options of `trigger` and `triggerAndWait`. */
export interface TriggerOptions {
  /**
   * One run per key and entry point (e.g. a webhook delivery id): 1-200 characters, not
   * starting with `$` (the keys of timer slots, events and resumes start with it).
   */
  readonly idempotencyKey?: string;
  /** For `triggerAndWait`: give up waiting (TIMEOUT) after this long; the run goes on. */
  readonly timeoutSeconds?: number;
}

/** What admission takes: a trigger's options, or a resume from a portable, signed state. */
export interface AdmitOptions extends TriggerOptions {
  readonly sessionState?: unknown;
}

/** What admitting a run reaches: the runtime's graph, streams, watcher and session key. */
export interface AdmissionScope {
  readonly graph: Graph;
  readonly executor: GraphExecutor;
  /** The runtime's queue (where a superseded paused run is cancelled). */
  readonly queue: RunQueue;
  readonly streams: ReadonlyMap<string, Stream>;
  readonly watcher: RunWatcher;
  readonly sessionKey: () => Promise<Buffer>;
}

const TriggerOptionsSchema = z
  .object({
    sessionState: z.unknown().optional(),
    idempotencyKey: z
      .string()
      .min(1)
      .max(200)
      .refine((k) => !k.startsWith("$"), {
        message:
          'must not start with "$" (reserved for the keys of timer slots, events and resumes)',
      })
      .optional(),
    timeoutSeconds: z.number().positive().finite().optional(),
  })
  .strict();
const FIX_OPTIONS =
  'Pass { idempotencyKey?: a string of 1-200 characters not starting with "$" (e.g. the webhook delivery id), timeoutSeconds?: seconds > 0 }.';

/**
 * Admits one run for trigger, timers and events. Every check that can refuse it (entry
 * point, context, options, input, sessionState signature and graph, state and answer schemas,
 * permission, size, backlog) runs before anything is written: only then is a paused run
 * a sessionState came from ended and the new one enqueued. `derivedKey`: the idempotency key a
 * timer slot or an event gives (under `$`, which user keys cannot start with).
 */
export async function admitExecution(
  a: AdmissionScope,
  entryPointId: string,
  input: unknown,
  ctx: ExecContext,
  options: AdmitOptions,
  chain: readonly string[],
  derivedKey?: string,
): Promise<RunRecord> {
  const stream = a.streams.get(entryPointId);
  if (stream === undefined) {
    throw new NervaError(
      ErrorCode.NOT_FOUND,
      `Unknown entry point "${entryPointId}" (entry points: ${[...a.streams.keys()].join(", ")}).`,
    );
  }
  if (!(ctx instanceof ExecContext)) {
    throw new NervaError(ErrorCode.INVALID_INPUT, "Invalid ctx: must be an ExecContext.", {
      issues: [{ path: "ctx", message: "must be an ExecContext" }],
    });
  }
  // The common trigger passes no options: nothing to check.
  const o = isEmptyObject(options)
    ? (options as z.output<typeof TriggerOptionsSchema>)
    : parseOrThrow(TriggerOptionsSchema, options, ErrorCode.INVALID_INPUT, "options", FIX_OPTIONS);
  checkUntrustedJson(input, "input", FIX_STATE);
  const start = await planStart(
    a.graph,
    a.executor,
    stream.ep.entryNode ?? a.graph.entry,
    input,
    o.sessionState,
    a.sessionKey,
  );
  // The same check the worker makes before it runs the graph, made here so that a caller who
  // may not run it is refused before a paused run is ended for its resume.
  if (!ctx.permissions.canUseAgent(a.graph.name)) {
    throw new NervaError(
      ErrorCode.PERMISSION_DENIED,
      `The caller's permissions do not allow graph "${a.graph.name}": add it to allowedAgents to trigger or resume its runs.`,
    );
  }
  const message = toJsonText(start.payload, "input", stream.queue.maxStepBytes, FIX_STATE);
  const runInput = {
    message,
    args: {
      graph: a.graph.name,
      entryPoint: stream.ep.id,
      trigger: stream.ep.trigger.type,
      chain: [...chain, stream.ep.id].join(","),
    },
  };
  // The size enqueue checks (the state, quoted inside the run's input): checked here, before a
  // paused run is ended for this resume.
  toJsonText(
    { ...runInput, tools: [], history: [] },
    "input",
    stream.queue.maxStepBytes,
    FIX_STATE,
  );
  const idempotencyKey = o.idempotencyKey ?? derivedKey ?? start.idempotencyKey;
  const admit = async (): Promise<RunRecord> => {
    await checkBacklog(stream, a.graph.name);
    if (start.supersedes !== null) {
      await supersede(a.queue, start.supersedes, start.idempotencyKey ?? "");
    }
    const run = await stream.queue.enqueue({
      handler: a.graph.name,
      input: runInput,
      ctx,
      priority: stream.ep.priority,
      ...(idempotencyKey === undefined
        ? {}
        : { idempotencyKey: `${stream.ep.id}:${idempotencyKey}` }),
      ...(stream.ep.timeoutSeconds === undefined
        ? {}
        : { timeoutSeconds: stream.ep.timeoutSeconds }),
    });
    stream.triggered += 1;
    return run;
  };
  const done = stream.admitting.then(admit, admit);
  stream.admitting = done.catch(() => undefined);
  const run = await done;
  a.watcher.watch(run);
  return run;
}

/**
 * Ends the paused run `id` a sessionState came from (when this store has it) before its
 * resume is admitted, so that it is answered once: the cancel is the store's atomic step, and
 * its reason names this resume (`token`: the sessionState's signature and the input), so a retry
 * of the same resume goes on (to the same run, by its idempotency key) while a resume with
 * another input, or one after a resume by id answered the run or after a cancel, gets
 * INVALID_STATE.
 */
async function supersede(queue: RunQueue, id: string, token: string): Promise<void> {
  const reason = `resumed from its sessionState (${token})`;
  let run = await queue.get(id);
  if (run === null) return; // kept in another store (or pruned): nothing here to answer twice
  if (run.status === RunStatus.PAUSED) run = await queue.cancel(id, { reason });
  if (run.status === RunStatus.CANCELLED && run.error?.message.includes(reason) === true) return;
  throw new NervaError(
    ErrorCode.INVALID_STATE,
    `Invalid sessionState: run ${id} it was issued for is ${run.status} now, no longer paused; it was answered already (by a resume by its id or another sessionState resume) or cancelled. A paused run is answered once: resume from the sessionState of its latest pause.`,
    { details: { runId: id, status: run.status } },
  );
}

/** Admits the run an event trigger of `ep` starts for `event` (once per event). */
export function admitFromEvent(
  a: AdmissionScope,
  ep: EntryPoint,
  event: RunEvent,
  input: Record<string, unknown>,
  chain: readonly string[],
): Promise<RunRecord> {
  return admitExecution(
    a,
    ep.id,
    input,
    ExecContext.create({ metadata: { trigger: "event" } }),
    {},
    chain,
    `$event:${event.runId}:${event.seq}`,
  );
}

/** Admits the run of one schedule slot of timer entry point `ep` (once per slot). */
export function admitSlot(
  a: AdmissionScope,
  ep: EntryPoint,
  slot: number,
  input: Record<string, unknown>,
): Promise<RunRecord> {
  return admitExecution(
    a,
    ep.id,
    input,
    ExecContext.create({ metadata: { trigger: "timer" } }),
    {},
    [],
    `$timer:${slot}`,
  );
}
