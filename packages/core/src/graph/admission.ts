import { ExecContext } from "../context/exec-context.js";
import { ErrorCode, NervaError } from "../errors.js";
import { checkUntrustedJson } from "../internal/json-limits.js";
import { toJsonText } from "../runs/json-value.js";
import type { RunQueue } from "../runs/run-queue.js";
import { RunStatus, type RunRecord } from "../runs/types.js";
import { checkBacklog, type Stream } from "./entry-streams.js";
import type { EntryPoint } from "./entry-points.js";
import type { GraphEvent } from "./events.js";
import type { ExecutionWatcher } from "./execution-watcher.js";
import type { GraphExecutor } from "./executor.js";
import { FIX_STATE, planStart } from "./session-start.js";
import type { Graph } from "./types.js";

/** Per-call options of `trigger` and `triggerAndWait`. */
export interface TriggerOptions {
  /** Resume a paused execution from its portable, signed state. */
  readonly sessionState?: unknown;
  /** One execution per key and entry point (e.g. a webhook delivery id). */
  readonly idempotencyKey?: string;
  /** For `triggerAndWait`: give up waiting (TIMEOUT) after this long; the execution goes on. */
  readonly timeoutSeconds?: number;
}

/** What admitting an execution reaches: the runtime's graph, streams, watcher and session key. */
export interface AdmissionScope {
  readonly graph: Graph;
  readonly executor: GraphExecutor;
  /** The runtime's queue (where a superseded paused run is cancelled). */
  readonly queue: RunQueue;
  readonly streams: ReadonlyMap<string, Stream>;
  readonly watcher: ExecutionWatcher;
  readonly sessionKey: () => Promise<Buffer>;
}

/** Admits one execution (backlog check, then enqueue) for trigger, timers and events. */
export async function admitExecution(
  a: AdmissionScope,
  entryPointId: string,
  input: unknown,
  ctx: ExecContext,
  options: TriggerOptions,
  chain: readonly string[],
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
  checkUntrustedJson(input, "input", FIX_STATE);
  const start = await planStart(
    a.graph,
    a.executor,
    stream.ep.entryNode ?? a.graph.entry,
    input,
    options.sessionState,
    a.sessionKey,
  );
  const message = toJsonText(start.payload, "input", stream.queue.maxStepBytes, FIX_STATE);
  const idempotencyKey = options.idempotencyKey ?? start.idempotencyKey;
  const admit = async (): Promise<RunRecord> => {
    await checkBacklog(stream, a.graph.name);
    const run = await stream.queue.enqueue({
      handler: a.graph.name,
      input: {
        message,
        args: {
          graph: a.graph.name,
          entryPoint: stream.ep.id,
          trigger: stream.ep.trigger.type,
          chain: [...chain, stream.ep.id].join(","),
        },
      },
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
  if (start.supersedes !== null) {
    await supersede(a.queue, start.supersedes, start.idempotencyKey ?? "");
  }
  const done = stream.admitting.then(admit, admit);
  stream.admitting = done.catch(() => undefined);
  const run = await done;
  a.watcher.watch(run);
  return run;
}

/**
 * Ends the paused execution `id` a sessionState came from (when this store has it) before its
 * resume is admitted, so that it is answered once: the cancel is the store's atomic step, and
 * its reason names this resume (`token`: the sessionState's signature and the input), so a retry
 * of the same resume goes on (to the same execution, by its idempotency key) while a resume with
 * another input, or one after injectInput answered the execution or after a cancel, gets
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
    `Invalid sessionState: execution ${id} it was issued for is ${run.status} now, no longer paused; it was answered already (by injectInput or another sessionState resume) or cancelled. A paused execution is answered once: resume from the sessionState of its latest pause.`,
    { details: { executionId: id, status: run.status } },
  );
}

/** Admits the execution an event trigger of `ep` starts for `event` (once per event). */
export function admitFromEvent(
  a: AdmissionScope,
  ep: EntryPoint,
  event: GraphEvent,
  input: Record<string, unknown>,
  chain: readonly string[],
): Promise<RunRecord> {
  return admitExecution(
    a,
    ep.id,
    input,
    ExecContext.create({ metadata: { trigger: "event" } }),
    {
      idempotencyKey: `event:${event.executionId}:${event.seq}`,
    },
    chain,
  );
}

/** Admits the execution of one schedule slot of timer entry point `ep` (once per slot). */
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
    {
      idempotencyKey: `timer:${slot}`,
    },
    [],
  );
}
