import { isEmptyObject } from "../internal/object-options.js";
import { stoppable } from "../internal/stoppable.js";
import { z } from "zod";
import { ExecContext } from "../context/exec-context.js";
import type { RunAnswerers } from "../context/run-slot.js";
import { newTraceId } from "../context/ids.js";
import { namedEvent } from "./event-names.js";
import { ErrorCode, NervaError, parseOrThrow } from "../errors.js";
import { createAgentInput, type AgentInputInit } from "../types/agent.js";
import { plainEnqueue, plainInput } from "./enqueue-check.js";
import { toJsonText } from "./json-value.js";
import { APPROVAL_KEY, approvalDecision } from "./approval-answer.js";
import {
  EnqueueOptionsSchema,
  EventsOptionsSchema,
  ListOptionsSchema,
  RetryOptionsSchema,
  RunQueueOptionsSchema,
  WaitOptionsSchema,
  type EnqueueOptions,
  type EventsOptions,
  type ListOptions,
  type RunQueueOptions,
  type WaitOptions,
} from "./options.js";
import { notifyLocalCancel } from "./cancel-watchers.js";
import type { RunStore } from "./store.js";
import { runNotFound } from "./transitions.js";
import type { StartSpanOptions } from "../context/options.js";
import {
  FINAL_EVENT_TYPES,
  RUN_STATUSES,
  RunStatus,
  isFinalStatus,
  type RetryPolicy,
  type RunEvent,
  type RunPage,
  type RunRecord,
} from "./types.js";

const FIX_ENQUEUE =
  "See EnqueueOptions: { handler | handlers, input: { message }, ctx?, idempotencyKey?, priority?, delaySeconds?, timeoutSeconds?, retry? }.";
const FINAL = RUN_STATUSES.filter(isFinalStatus);
const EVENT_PAGE = 500;

/**
 * A new run id: sortable by creation time, 80 bits of randomness after it (from the pooled
 * crypto source request and trace ids are drawn from: a `randomBytes` call per run costs more
 * than the rest of an enqueue in memory).
 */
export function newRunId(): string {
  return `run_${Date.now().toString(36).padStart(9, "0")}${newTraceId().slice(0, 20)}`;
}

function checkId(id: unknown): string {
  if (typeof id !== "string" || id.length === 0 || id.length > 200) {
    throw new NervaError(
      ErrorCode.INVALID_INPUT,
      `Invalid id: must be the run id enqueue() returned (got ${JSON.stringify(id)}).`,
      { issues: [{ path: "id", message: "must be a non-empty string" }] },
    );
  }
  return id;
}

const ChainAnswerSchema = z.object({ args: z.record(z.string(), z.string()) }).strict();
const CancelOptionsSchema = z.object({ reason: z.string().max(1000).nullable().optional() });
const ResumeOptionsSchema = z.object({
  key: z.string().min(1).nullable().optional(),
  ctx: z.custom<ExecContext>((v) => v instanceof ExecContext, "must be an ExecContext").optional(),
});
const CLIENT: StartSpanOptions = Object.freeze({ kind: "client" });

/**
 * The producer side of durable runs: enqueue runs, read them, follow their events, cancel,
 * resume, redrive and prune. Any number of processes may share one queue through its store;
 * `Runner`s execute the runs.
 *
 * @example
 * const queue = new RunQueue({ store: new InMemoryRunStore(), name: "default" });
 * const run = await queue.enqueue({ handler: "my_agent", input: { message: "hi" }, ctx });
 * const done = await queue.wait(run.id, { timeoutSeconds: 30 });
 */
export class RunQueue {
  readonly name: string;
  readonly store: RunStore;
  /** Largest step value, checkpoint, resume value or input, in bytes of JSON. */
  readonly maxStepBytes: number;
  readonly #options: z.output<typeof RunQueueOptionsSchema>;

  constructor(options: RunQueueOptions) {
    this.#options = parseOrThrow(
      RunQueueOptionsSchema,
      options,
      ErrorCode.INVALID_OPTIONS,
      "options",
      "Pass { store: a RunStore, name?: string, maxStepBytes?: number, retry?: {...}, maxReclaims?: number }.",
    );
    this.name = this.#options.name;
    this.store = this.#options.store;
    this.maxStepBytes = this.#options.maxStepBytes;
  }

  /**
   * A queue on the same store with the same options (`maxStepBytes`, `retry`, `maxReclaims`)
   * under another name: how a GraphHost makes one queue per entry point from the one it is given.
   *
   * @example
   * const urgent = queue.withName(`${queue.name}.urgent`);
   */
  withName(name: string): RunQueue {
    return new RunQueue({ ...this.#options, name });
  }

  /**
   * Queues a run of `handler` (or the chain `handlers`) with `input`, as the identity of `ctx`.
   * With an `idempotencyKey` already used in this queue, returns that run instead.
   *
   * @example
   * const run = await queue.enqueue({ handler: "refund_agent", input: { message: "refund" }, ctx, idempotencyKey: "refund-42" });
   */
  async enqueue(options: EnqueueOptions): Promise<RunRecord> {
    const o =
      plainEnqueue(options) ??
      parseOrThrow(EnqueueOptionsSchema, options, ErrorCode.INVALID_INPUT, "options", FIX_ENQUEUE);
    const input = plainInput(o.input) ?? createAgentInput(o.input as AgentInputInit);
    const wireInput = {
      message: input.message,
      args: { ...input.args },
      tools: input.tools.map((t) => ({ ...t })),
      history: input.history.map((h) => ({ ...h })),
    };
    toJsonText(wireInput, "options.input", this.maxStepBytes, "Send a smaller input.");
    const retry = o.retry === undefined ? this.#retry() : this.#retryWith(o.retry);
    // The run joins the enqueuer's trace under this span: its id is persisted with the run
    // (the context's span_id), and the worker that executes it nests its spans there.
    const ctx = o.ctx ?? ExecContext.create();
    const span = ctx.startSpan(
      "runs.enqueue",
      { "run.queue": this.name, handler: (o.handlers ?? [o.handler as string]).join(",") },
      CLIENT,
    );
    let run: RunRecord;
    try {
      ({ run } = await this.store.create({
        id: newRunId(),
        queue: this.name,
        handlers: o.handlers ?? [o.handler as string],
        input: wireInput,
        retry,
        maxReclaims: o.maxReclaims ?? this.#options.maxReclaims,
        priority: o.priority,
        timeoutSeconds: o.timeoutSeconds ?? null,
        idempotencyKey: o.idempotencyKey ?? null,
        context: { ...ctx.toWire(), span_id: span.id, cancelled: false },
        delaySeconds: o.delaySeconds,
      }));
    } catch (err) {
      span.end("error", err instanceof Error ? err.message : String(err));
      throw err;
    }
    span.setAttribute("run.id", run.id);
    span.end("ok");
    return run;
  }

  /** The retry policy of a run with `changes` over the queue's defaults. */
  #retryWith(changes: EnqueueOptions["retry"]): RetryPolicy {
    return parseOrThrow(
      RetryOptionsSchema,
      { ...this.#options.retry, ...changes },
      ErrorCode.INVALID_INPUT,
      "options.retry",
      "maxAttempts >= 1, delays >= 0 seconds, backoffFactor >= 1, jitter in [0, 1].",
    );
  }

  #defaultRetry: Readonly<RetryPolicy> | null = null;
  /**
   * The queue's own retry policy, resolved once (frozen: every run without a retry override
   * shares it), not parsed again on each enqueue.
   */
  #retry(): Readonly<RetryPolicy> {
    return (this.#defaultRetry ??= Object.freeze(this.#retryWith(undefined)));
  }

  /** The run `id`, or `null` when there is none (never was, or pruned). */
  async get(id: string): Promise<RunRecord | null> {
    return this.store.get(checkId(id));
  }

  /**
   * Waits until the run reaches one of `until` (the final statuses by default) and returns it.
   * Throws TIMEOUT after `timeoutSeconds`, NOT_FOUND for an unknown id.
   *
   * @example
   * const paused = await queue.wait(run.id, { until: ["paused"], timeoutSeconds: 10 });
   */
  async wait(id: string, options: WaitOptions = {}): Promise<RunRecord> {
    checkId(id);
    // The common call passes no options: nothing to check.
    const o = isEmptyObject(options)
      ? (options as z.output<typeof WaitOptionsSchema>)
      : parseOrThrow(
          WaitOptionsSchema,
          options,
          ErrorCode.INVALID_INPUT,
          "options",
          "Pass { timeoutSeconds?, until?: RunStatus[], signal? }.",
        );
    const until: readonly RunStatus[] = o.until ?? FINAL;
    const deadline =
      o.timeoutSeconds === undefined ? Infinity : Date.now() + o.timeoutSeconds * 1000;
    for (;;) {
      const run = await this.store.get(id);
      if (run === null) throw runNotFound(id);
      if (until.includes(run.status)) return run;
      const left = deadline - Date.now();
      if (left <= 0) {
        throw new NervaError(
          ErrorCode.TIMEOUT,
          `Run ${id} is still ${run.status} after ${o.timeoutSeconds} s (waited for ${until.join(" | ")}).`,
          { details: { runId: id, status: run.status } },
        );
      }
      if (o.signal?.aborted === true) {
        throw new NervaError(ErrorCode.CANCELLED, `Waiting for run ${id} was cancelled.`);
      }
      const wake = { timeoutSeconds: Math.min(left, 30_000) / 1000, signal: o.signal };
      // Only a change to a status in `until` can end this wait: a store that wakes on those alone
      // spares the waiter a read after every step of the run and every status on the way.
      if (this.store.waitForStatusChange !== undefined) {
        await this.store.waitForStatusChange(id, run.status, { ...wake, until });
      } else {
        await this.store.waitForEvents(id, run.lastSeq, wake);
      }
    }
  }

  /**
   * Cancels the run: a pending or paused run ends `cancelled` at once; the worker of a running
   * one aborts its `ctx.signal` at once (a worker in this process on the same store object, or one
   * in any process when the store can notify it: SQLite within `pollSeconds`, Redis by pub/sub; other
   * stores at the worker's next heartbeat) and it ends `cancelled`. A finished run stays.
   *
   * @example
   * await queue.cancel(run.id, { reason: "user left" });
   */
  async cancel(id: string, options: { reason?: string } = {}): Promise<RunRecord> {
    const o = parseOrThrow(
      CancelOptionsSchema,
      options,
      ErrorCode.INVALID_INPUT,
      "options",
      "Pass { reason?: a string of at most 1000 characters }.",
    );
    const run = await this.store.cancel(checkId(id), o.reason ?? null);
    if (run.status === RunStatus.RUNNING) notifyLocalCancel(this.store, run.id);
    return run;
  }

  /**
   * Answers a paused run: `value` becomes what its `waitForInput(key)` returns (for a chain that
   * paused on `needs_data`/`needs_credentials`, `{ args }` merged into the handler's args; for a
   * policy approval, `{ decision: "approve" | "deny", note? }`, recorded with its decider).
   * PERMISSION_DENIED when the pause names who may answer and `ctx` is not one of them.
   * INVALID_STATE when the run is not paused; INVALID_INPUT for another key.
   *
   * @example
   * await queue.resume(run.id, { approved: true }, { key: "approve" });
   */
  async resume(
    id: string,
    value: unknown,
    options: { key?: string; ctx?: ExecContext } = {},
  ): Promise<RunRecord> {
    checkId(id);
    const o = parseOrThrow(
      ResumeOptionsSchema,
      options,
      ErrorCode.INVALID_INPUT,
      "options",
      "Pass { key?: the non-empty pause key the run waits for, ctx?: the answerer's ExecContext }.",
    );
    const key = o.key ?? null;
    let text = toJsonText(value ?? null, "value", this.maxStepBytes, "Resume with plain JSON.");
    const pause = (await this.store.get(id))?.pause ?? null;
    if (pause?.answeredBy !== undefined) checkAnswerer(id, pause.answeredBy, o.ctx);
    const waiting = pause?.key ?? "";
    if (pause !== null && waiting === APPROVAL_KEY) {
      text = JSON.stringify(approvalDecision(id, pause, value, o.ctx, Date.now()));
    }
    if (waiting.startsWith("$chain/")) {
      parseOrThrow(
        ChainAnswerSchema,
        value,
        ErrorCode.INVALID_INPUT,
        "value",
        'A chain waiting for data takes { args: { name: "value" } }.',
      );
    }
    return this.store.resume(id, key, text);
  }

  /**
   * The run's events with `seq > afterSeq`, then new ones as they are written, ending after the
   * final event. Stops quietly when `signal` aborts, and when its reader calls `return()` (a
   * `break` in `for await`), even while a `next()` waits for new events: the wait in the store
   * ends at once. NOT_FOUND for an unknown id.
   *
   * @example
   * for await (const e of queue.events(run.id, { afterSeq: 0 })) console.log(e.seq, e.type, e.data);
   */
  events(id: string, options: EventsOptions = {}): AsyncGenerator<RunEvent, void, undefined> {
    return stoppable((stopped) => this.#tail(id, options, stopped));
  }

  async *#tail(
    id: string,
    options: EventsOptions,
    stopped: AbortSignal,
  ): AsyncGenerator<RunEvent, void, undefined> {
    checkId(id);
    const o = parseOrThrow(
      EventsOptionsSchema,
      options,
      ErrorCode.INVALID_INPUT,
      "options",
      "Pass { afterSeq?: number >= 0, follow?: boolean, signal?: AbortSignal }.",
    );
    const signal = o.signal === undefined ? stopped : AbortSignal.any([o.signal, stopped]);
    let after = o.afterSeq;
    const asked = await this.store.get(id);
    if (asked === null) throw runNotFound(id);
    // Not following: the history as it was when asked, every page of it, nothing after.
    const last = o.follow ? Number.POSITIVE_INFINITY : asked.lastSeq;
    for (;;) {
      if (signal.aborted || after >= last) return;
      const batch = await this.store.readEvents(id, after, EVENT_PAGE);
      for (const event of batch) {
        if (event.seq > last) return;
        yield namedEvent(event);
        after = event.seq;
        if (FINAL_EVENT_TYPES.has(event.type) && (await this.#endsAt(id, event.seq))) return;
      }
      if (batch.length === EVENT_PAGE) continue;
      if (!o.follow) return;
      if (batch.length === 0) {
        const run = await this.store.get(id);
        if (run === null || (isFinalStatus(run.status) && run.lastSeq <= after)) return;
      }
      await this.store.waitForEvents(id, after, { timeoutSeconds: 30, signal });
    }
  }

  /** Whether the run's history ends at `seq` (it was not redriven since). */
  async #endsAt(id: string, seq: number): Promise<boolean> {
    const run = await this.store.get(id);
    return run === null || (isFinalStatus(run.status) && run.lastSeq <= seq);
  }

  /**
   * Runs of this queue, newest first. `list({ status: "failed" })` is the dead-letter list.
   *
   * @example
   * const { runs, nextCursor } = await queue.list({ status: "failed", limit: 50 });
   */
  async list(options: ListOptions = {}): Promise<RunPage> {
    const o = parseOrThrow(
      ListOptionsSchema,
      options,
      ErrorCode.INVALID_INPUT,
      "options",
      "Pass { status?, handler?, userId?, limit? (1-1000), cursor? }.",
    );
    return this.store.list({
      queue: this.name,
      limit: o.limit,
      cursor: o.cursor ?? null,
      ...(o.status === undefined ? {} : { status: o.status }),
      ...(o.handler === undefined ? {} : { handler: o.handler }),
      ...(o.userId === undefined ? {} : { userId: o.userId }),
    });
  }

  /**
   * Queues a failed, timed-out or cancelled run again with fresh attempts; its committed steps
   * are kept, so it resumes where it failed.
   *
   * @example
   * for (const run of (await queue.list({ status: "failed" })).runs) await queue.redrive(run.id);
   */
  async redrive(id: string): Promise<RunRecord> {
    return this.store.redrive(checkId(id));
  }

  /**
   * Deletes this queue's runs that finished more than `olderThanSeconds` ago, with their steps and
   * history. Returns how many.
   *
   * @example
   * await queue.prune({ olderThanSeconds: 7 * 24 * 3600 });
   */
  async prune(options: { olderThanSeconds: number }): Promise<number> {
    const o = parseOrThrow(
      z.object({ olderThanSeconds: z.number().nonnegative().finite() }).strict(),
      options,
      ErrorCode.INVALID_INPUT,
      "options",
      "Pass { olderThanSeconds: number >= 0 }.",
    );
    return this.store.prune(this.name, Date.now() - o.olderThanSeconds * 1000);
  }
}

/**
 * Refuses (PERMISSION_DENIED, before anything changes) an answer to a pause that names who may
 * answer, from a context that is not one of them or from no context at all.
 */
function checkAnswerer(id: string, who: RunAnswerers, ctx: ExecContext | undefined): void {
  const user = ctx?.userId ?? null;
  const session = ctx?.sessionId ?? null;
  const excepted =
    user !== null
      ? (who.exceptUsers ?? []).includes(user)
      : session !== null && (who.exceptSessions ?? []).includes(session);
  if (excepted) {
    throw new NervaError(
      ErrorCode.PERMISSION_DENIED,
      `Run ${id} may not be answered by ${user !== null ? `user ${user}` : `session ${session}`}, who asked for it (self-approval is not allowed).`,
      { details: { runId: id } },
    );
  }
  const byUser = user !== null && (who.users ?? []).includes(user);
  const byRole = ctx !== undefined && (who.roles ?? []).some((r) => ctx.permissions.hasRole(r));
  if (byUser || byRole) return;
  const names = [
    ...(who.users ?? []).map((u) => `user ${u}`),
    ...(who.roles ?? []).map((r) => `role ${r}`),
  ].join(", ");
  throw new NervaError(
    ErrorCode.PERMISSION_DENIED,
    ctx === undefined
      ? `Run ${id} waits for an answer from ${names}: pass the answerer's context, resume(id, value, { ctx }).`
      : `Run ${id} waits for an answer from ${names}; ${user === null ? "this context has no user" : `user ${user}`} is not one of them.`,
    { details: { runId: id } },
  );
}
