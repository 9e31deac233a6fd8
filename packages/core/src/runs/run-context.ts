import { ErrorCode, NervaError, errorPolicyOf, isNervaError } from "../errors.js";
import type { JsonValue } from "../types/agent.js";
import { toJsonText } from "./json-value.js";
import type { ClaimedRun, LeaseRef, RunStore } from "./store.js";
import { RESERVED_EVENT_PREFIXES, RunEventType, type RunPause } from "./types.js";
import {
  kUnwind,
  type RunAnswerers,
  type RunContext,
  type RunMarks,
  type WaitForInputOptions,
} from "../context/run-slot.js";

export type { RunContext, WaitForInputOptions } from "../context/run-slot.js";

/** Thrown by `waitForInput` after the run paused: unwinds the handler. Not an agent failure. */
export class RunPaused extends Error {
  override readonly name = "RunPaused";
  /** A pause is no failure of the handler: a circuit breaker does not count it. */
  readonly [kUnwind] = true;
  constructor(readonly key: string) {
    super(`The run paused to wait for input "${key}"; rethrow this so the handler unwinds.`);
  }
}

const KEY_FIX = 'Use a short, stable name such as "load-order" or "load-order-2".';

/**
 * Checks a key a user gave (step, input). Keys Nerva derives live where these cannot reach: a
 * key used again gets `#2`, `#3`… and Nerva's own keys start with `$`, so a user key has no
 * `#` and does not start with `$`.
 */
function checkKey(key: unknown, label: string): string {
  if (
    typeof key !== "string" ||
    key.length === 0 ||
    key.length > 200 ||
    key.startsWith("$") ||
    key.includes("#")
  ) {
    throw new NervaError(
      ErrorCode.INVALID_INPUT,
      `Invalid ${label} ${JSON.stringify(key)}: must be a string of 1-200 characters without "#" and not starting with "$" (both are reserved for the keys Nerva derives: a key used again becomes key#2). ${KEY_FIX}`,
      {
        issues: [
          { path: label, message: 'must be 1-200 characters, without "#", not starting with "$"' },
        ],
      },
    );
  }
  return key;
}

function isPromiseLike<T>(v: T | Promise<T>): v is Promise<T> {
  return typeof (v as { then?: unknown } | null)?.then === "function";
}

function parse<T>(text: string): T {
  return (text === "" ? undefined : JSON.parse(text)) as T;
}

/** An error seen thrown inside the run, with whether retrying may help. */
export interface ThrownError {
  readonly code: string;
  readonly message: string;
  readonly retriable: boolean;
}

/**
 * One execution of a claimed run: the {@link RunContext} the Runner puts in `ctx.run`. Holds the
 * lease, the committed steps and answers loaded at claim, and the write path to the store.
 */
export class ActiveRun implements RunContext, RunMarks {
  readonly runId: string;
  readonly attempt: number;
  readonly fence: number;
  readonly lease: LeaseRef;
  readonly #store: RunStore;
  readonly #maxBytes: number;
  readonly #steps: Map<string, string>;
  readonly #inputs: ReadonlyMap<string, string>;
  /** How many times each step key (`s`) and input key (`i`) was used in this execution. */
  readonly #used = { s: new Map<string, number>(), i: new Map<string, number>() };
  /**
   * The marks whose uses this execution took, in order: a step whose body took some commits
   * their list (`$marks/<step key>`), and an execution that skips the committed step takes them
   * again, so the marks after it keep their numbers.
   */
  readonly #markUses: string[] = [];
  /** Steps begun whose `step.started` is not written yet: key → when it began (epoch ms). */
  readonly #unwritten = new Map<string, number>();
  #flushing = false;
  #checkpoint: string | null;
  /** Set once a write was refused: nothing more is written. */
  lost: NervaError | null = null;
  /** Set once the run paused. */
  paused: string | null = null;
  /** The last error thrown through a RunContext call (the runtime only keeps its message). */
  thrown: ThrownError | null = null;
  /** Called once when the lease is found lost (aborts the handler's context). */
  onLost: (err: NervaError) => void = () => undefined;

  constructor(store: RunStore, claimed: ClaimedRun, maxStepBytes: number) {
    this.#store = store;
    this.lease = claimed.lease;
    this.runId = claimed.run.id;
    this.attempt = claimed.run.attempt;
    this.fence = claimed.lease.fence;
    this.#maxBytes = maxStepBytes;
    this.#steps = new Map(claimed.steps);
    this.#inputs = claimed.inputs;
    this.#checkpoint = claimed.checkpoint;
  }

  step<T>(key: string, fn: () => T | Promise<T>): Promise<T> {
    return this.nestedStep(null, key, fn);
  }

  /**
   * `step` with the user's `key` under a derived `prefix` (`$node/review#2/key` for a graph
   * node's `ctx.step`), or alone when `prefix` is `null`.
   */
  nestedStep<T>(prefix: string | null, key: string, fn: () => T | Promise<T>): Promise<T> {
    return this.#guard(async () => {
      checkKey(key, "step key");
      if (typeof fn !== "function") {
        throw new NervaError(
          ErrorCode.INVALID_INPUT,
          `Invalid step "${key}": fn must be a function returning the step's JSON value.`,
          { issues: [{ path: "fn", message: "must be a function" }] },
        );
      }
      return this.#markedStep<T>(this.unique("s", prefix === null ? key : `${prefix}/${key}`), fn);
    });
  }

  /**
   * `step` for a key Nerva derives (`$`-prefixed, e.g. a graph's node visits): no user-key
   * rules, made unique like a user key, its errors remembered like a step's.
   */
  derivedStep<T>(key: string, fn: () => T | Promise<T>): Promise<T> {
    return this.#markedStep<T>(this.unique("s", key), fn, false);
  }

  /**
   * `memo` of a step whose body may use marks (see {@link #markUses}): when it is committed, the
   * uses its body took are taken again; when it runs and takes some, their list is committed as
   * `$marks/<key>` before the step is. (Uses another step running at the same time took are
   * listed too: an execution that skips this step then numbers that step's uses past the ones
   * made, and counts them again, never less.)
   */
  #markedStep<T>(key: string, fn: () => T | Promise<T>, copy = true): Promise<T> {
    const took = this.#steps.has(key) ? this.#steps.get(`$marks/${key}`) : undefined;
    for (const mark of took === undefined ? [] : parse<string[]>(took)) {
      this.unique("s", mark);
      this.#markUses.push(mark);
    }
    return this.memo<T>(
      key,
      () => {
        const from = this.#markUses.length;
        // A synchronous answer that took no mark stays synchronous (memo commits it at once).
        const settle = (value: T): T | Promise<T> => {
          if (this.#markUses.length === from) return value;
          const used = this.#markUses.slice(from);
          return this.memo(`$marks/${key}`, () => used, false).then(() => value);
        };
        const answer = fn();
        return isPromiseLike(answer) ? answer.then(settle) : settle(answer);
      },
      copy,
    );
  }

  /**
   * `step` without the key rules and without making the key unique, for the Runner's own keys.
   * `copy`: whether a value committed now is returned as a copy read back from its JSON (what a
   * user's step gets, so it never shares objects with what its function returned) or as it is
   * (Nerva's own steps, whose values it builds and drops itself: the check before the commit
   * already made sure it reads back equal).
   */
  async memo<T>(key: string, fn: () => T | Promise<T>, copy = true): Promise<T> {
    const done = this.#steps.get(key);
    if (done !== undefined) return parse<T>(done);
    let committed: string;
    let value: T;
    let text: string;
    /** The start this step's commit took over (written with it), while that commit is pending. */
    let taken: number | undefined;
    try {
      const commitStarted = this.#store.commitStartedStep;
      if (commitStarted === undefined) {
        await this.#write(() => this.#store.append(this.lease, RunEventType.STEP_STARTED, { key }));
      } else {
        this.#deferStart(key);
      }
      const answer = fn();
      // A synchronous answer is committed without waiting a turn of the microtask queue.
      value = isPromiseLike(answer) ? await answer : answer;
      text =
        value === undefined
          ? ""
          : toJsonText(
              value,
              `value of step "${key}"`,
              this.#maxBytes,
              "Return plain JSON (objects, arrays, strings, finite numbers, booleans, null) within maxStepBytes.",
            );
      const startedAt = this.#unwritten.get(key);
      if (commitStarted !== undefined && startedAt !== undefined && this.#unwritten.size === 1) {
        // The common case (no other step's start waits to be written): the fenced write of
        // #write and #commit inline, two async layers less per step.
        if (this.lost !== null) throw this.lost;
        if (this.paused !== null) throw new RunPaused(this.paused);
        this.#unwritten.delete(key);
        taken = startedAt;
        committed = await commitStarted.call(this.#store, this.lease, key, text, startedAt);
      } else {
        committed = await this.#write(() => this.#commit(key, text), false);
      }
    } catch (err) {
      if (taken !== undefined) {
        // Nothing was written: the start is still to write (below), and a refused fence loses
        // the lease, as #write and #commit do.
        this.#unwritten.set(key, taken);
        if (isNervaError(err, ErrorCode.LEASE_LOST)) this.lose(err);
      }
      this.note(err);
      // A step that failed still shows in the history as started, as when its start came first.
      await this.writeStarts().catch(() => undefined);
      throw err;
    }
    this.#steps.set(key, committed);
    return copy || committed !== text ? parse<T>(committed) : value;
  }

  /**
   * Writes the `step.started` events not written yet (steps still running, or that failed).
   * Every other write does it first, so the history keeps the order things happened in.
   */
  writeStarts(): Promise<void> {
    return this.#unwritten.size === 0 ? Promise.resolve() : this.#write(() => Promise.resolve());
  }

  /**
   * Remembers that step `key` began, without writing it yet: a step that ends within this turn
   * of the event loop has its start written with its commit (one store write instead of two);
   * one still running when the turn ends (waiting on I/O or a timer) has it written then, so
   * tails see it begin.
   */
  #deferStart(key: string): void {
    this.#unwritten.set(key, Date.now());
    if (this.#flushing) return;
    this.#flushing = true;
    setImmediate(() => {
      this.#flushing = false;
      this.writeStarts().catch(() => undefined);
    });
  }

  /** Commits step `key`, with its start when that is not written yet. */
  async #commit(key: string, text: string): Promise<string> {
    const startedAt = this.#unwritten.get(key);
    const commitStarted = this.#store.commitStartedStep;
    if (startedAt === undefined || commitStarted === undefined) {
      return this.#store.commitStep(this.lease, key, text);
    }
    // Steps that began before this one (it runs inside them) have their starts written first.
    if (this.#unwritten.keys().next().value !== key) await this.#appendStarts(key);
    this.#unwritten.delete(key);
    try {
      return await commitStarted.call(this.#store, this.lease, key, text, startedAt);
    } catch (err) {
      // Nothing was written: the start is still to write (the failure path writes it).
      this.#unwritten.set(key, startedAt);
      throw err;
    }
  }

  /** Writes pending starts oldest first, stopping at `until` when given. */
  async #appendStarts(until?: string): Promise<void> {
    for (const key of this.#unwritten.keys()) {
      if (key === until) return;
      this.#unwritten.delete(key);
      await this.#store.append(this.lease, RunEventType.STEP_STARTED, { key });
    }
  }

  /** Whether `key` was committed (a memoized chain step), and its value. */
  committed<T>(key: string): T | undefined {
    const done = this.#steps.get(key);
    return done === undefined ? undefined : parse<T>(done);
  }

  waitForInput<T = JsonValue>(key: string, options: WaitForInputOptions = {}): Promise<T> {
    return this.#guard(async () => {
      checkKey(key, "input key");
      const prompt = options.prompt ?? null;
      if (prompt !== null && typeof prompt !== "string") {
        throw new NervaError(ErrorCode.INVALID_INPUT, "Invalid options.prompt: must be a string.", {
          issues: [{ path: "options.prompt", message: "must be a string" }],
        });
      }
      const data = options.data ?? {};
      toJsonText(data, "options.data", this.#maxBytes, "Pass a plain JSON object.");
      const answeredBy = checkAnswerers(options.answeredBy);
      return this.ask<T>(this.unique("i", key), {
        key,
        prompt,
        kind: options.kind ?? "approval",
        data,
        ...(answeredBy === undefined ? {} : { answeredBy }),
      });
    });
  }

  /**
   * `waitForInput` for a key Nerva derives (`$`-prefixed: the kit's tool approvals), made unique
   * like a user key; `options` as Nerva builds them (a prompt, a kind, JSON data, answerers).
   */
  askDerived<T = JsonValue>(
    key: string,
    options: WaitForInputOptions & { kind: string },
  ): Promise<T> {
    return this.#guard(async () => {
      const data = options.data ?? {};
      toJsonText(data, "options.data", this.#maxBytes, "Pass a plain JSON object.");
      const answeredBy = checkAnswerers(options.answeredBy);
      return this.ask<T>(this.unique("i", key), {
        key,
        prompt: options.prompt ?? null,
        kind: options.kind,
        data,
        ...(answeredBy === undefined ? {} : { answeredBy }),
      });
    });
  }

  /**
   * The answers already given to `key`, `key#2`, … in order, marking those keys used: what a
   * replay applies before asking again.
   */
  takeAnswers<T>(key: string): T[] {
    const out: T[] = [];
    for (;;) {
      const n = (this.#used.i.get(key) ?? 0) + 1;
      const text = this.#inputs.get(n === 1 ? key : `${key}#${n}`);
      if (text === undefined) return out;
      this.#used.i.set(key, n);
      out.push(parse<T>(text));
    }
  }

  /** The answer to `pause.key` (made unique by the caller), or pause the run and throw RunPaused. */
  async ask<T>(uniqueKey: string, pause: RunPause): Promise<T> {
    const answer = this.#inputs.get(uniqueKey);
    if (answer !== undefined) return parse<T>(answer);
    await this.#write(() => this.#store.pause(this.lease, { ...pause, key: uniqueKey }));
    this.paused = uniqueKey;
    throw new RunPaused(uniqueKey);
  }

  checkpoint(state: JsonValue): Promise<void> {
    return this.#guard(async () => {
      const text = toJsonText(state, "checkpoint state", this.#maxBytes, "Pass plain JSON.");
      await this.#write(() => this.#store.checkpoint(this.lease, text));
      this.#checkpoint = text;
    });
  }

  lastCheckpoint<T = JsonValue>(): T | null {
    return this.#checkpoint === null ? null : parse<T>(this.#checkpoint);
  }

  emit(type: string, data: Record<string, JsonValue> = {}): Promise<void> {
    return this.#guard(async () => {
      if (
        typeof type !== "string" ||
        type.length === 0 ||
        type.length > 100 ||
        RESERVED_EVENT_PREFIXES.some((p) => type.startsWith(p))
      ) {
        throw new NervaError(
          ErrorCode.INVALID_INPUT,
          `Invalid event type ${JSON.stringify(type)}: must be 1-100 characters and not start with ${RESERVED_EVENT_PREFIXES.join(", ")} (reserved for Nerva). Use your own prefix, e.g. "app.progress".`,
          { issues: [{ path: "type", message: "reserved or empty" }] },
        );
      }
      const obj: unknown = data;
      if (typeof obj !== "object" || obj === null || Array.isArray(obj)) {
        throw new NervaError(ErrorCode.INVALID_INPUT, "Invalid data: must be a JSON object.", {
          issues: [{ path: "data", message: "must be a JSON object" }],
        });
      }
      toJsonText(data, "data", this.#maxBytes, "Pass a plain JSON object.");
      await this.#write(() => this.#store.append(this.lease, type, data));
    });
  }

  /**
   * Appends one of Nerva's own event types (`node.failed`, `tool.started`…), which `emit`
   * refuses to user code. Fenced like every write.
   */
  record(type: RunEventType, data: Record<string, JsonValue>): Promise<void> {
    return this.#guard(async () => {
      await this.#write(() => this.#store.append(this.lease, type, data));
    });
  }

  /**
   * Appends an `output.delta` event for a streamed chunk; a chunk of the model's reasoning has
   * `kind: "reasoning"`.
   */
  async delta(chunk: string, kind: "reasoning" | null = null): Promise<void> {
    const data: Record<string, JsonValue> = kind === null ? { chunk } : { chunk, kind };
    await this.#write(() => this.#store.append(this.lease, RunEventType.OUTPUT_DELTA, data));
  }

  /** Remembers an error thrown inside the run, with whether a retry can help. */
  note(err: unknown): void {
    if (err instanceof RunPaused) return;
    const message = err instanceof Error ? err.message : String(err);
    if (isNervaError(err)) {
      const retriable = errorPolicyOf(err.code)?.retriable ?? true;
      this.thrown = { code: err.code, message, retriable };
    } else {
      this.thrown = { code: "HANDLER_ERROR", message, retriable: true };
    }
  }

  /** Marks the lease lost (once) and tells the Runner. */
  lose(err: NervaError): void {
    if (this.lost !== null) return;
    this.lost = err;
    this.onLost(err);
  }

  /**
   * `key` the first time in this execution, then `key#2`, `key#3`… (per kind of key). Without
   * `take`, the key the next use would get, leaving it unused.
   */
  unique(space: "s" | "i", key: string, take = true): string {
    const used = this.#used[space];
    const n = (used.get(key) ?? 0) + 1;
    if (take) used.set(key, n);
    return n === 1 ? key : `${key}#${n}`;
  }

  nextMark(key: `$${string}`, take: boolean): string | null {
    const numbered = this.unique("s", key, take);
    if (take) this.#markUses.push(key);
    return this.#steps.has(numbered) ? null : numbered;
  }

  madeMark(key: `$${string}`): JsonValue | undefined {
    const made = this.#steps.get(this.unique("s", key, false));
    if (made === undefined) return undefined;
    this.unique("s", key);
    this.#markUses.push(key);
    return parse<JsonValue>(made);
  }

  async mark(key: string, value: JsonValue = true): Promise<void> {
    await this.memo(key, () => value, false);
  }

  async #guard<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      this.note(err);
      throw err;
    }
  }

  /** Runs one fenced write, after the pending starts unless `starts` is false. */
  async #write<T>(fn: () => Promise<T>, starts = true): Promise<T> {
    if (this.lost !== null) throw this.lost;
    if (this.paused !== null) throw new RunPaused(this.paused);
    try {
      if (starts && this.#unwritten.size > 0) await this.#appendStarts();
      return await fn();
    } catch (err) {
      if (isNervaError(err, ErrorCode.LEASE_LOST)) this.lose(err);
      throw err;
    }
  }
}

/**
 * Appends a Nerva event type to the run `ctx.run` is (an {@link ActiveRun}; other RunContexts, a
 * test's own, get it through `emit` only when the type is not reserved).
 */
export function recordEvent(
  run: RunContext,
  type: RunEventType,
  data: Record<string, JsonValue>,
): Promise<void> {
  return run instanceof ActiveRun ? run.record(type, data) : run.emit(type, data);
}

const NAMES = /^[^\n]{1,200}$/;

/** `answeredBy` as given, checked: lists of 1-100 names (users or roles), at least one name. */
function checkAnswerers(given: unknown): RunAnswerers | undefined {
  if (given === undefined) return undefined;
  const bad = (why: string): NervaError =>
    new NervaError(
      ErrorCode.INVALID_INPUT,
      `Invalid options.answeredBy: ${why}. Pass { users?: ["user id"], roles?: ["approver"] } with at least one name.`,
      { issues: [{ path: "options.answeredBy", message: why }] },
    );
  if (typeof given !== "object" || given === null || Array.isArray(given)) {
    throw bad("must be an object");
  }
  const { users, roles, exceptUsers, exceptSessions, ...rest } = given as Record<string, unknown>;
  if (Object.keys(rest).length > 0) throw bad(`unknown key ${Object.keys(rest)[0]}`);
  const list = (v: unknown, name: string): string[] | undefined => {
    if (v === undefined) return undefined;
    if (
      !Array.isArray(v) ||
      v.length > 100 ||
      !v.every((x) => typeof x === "string" && NAMES.test(x))
    ) {
      throw bad(`${name} must be a list of at most 100 non-empty names`);
    }
    return [...(v as string[])];
  };
  const u = list(users, "users");
  const r = list(roles, "roles");
  const xu = list(exceptUsers, "exceptUsers");
  const xs = list(exceptSessions, "exceptSessions");
  if ((u?.length ?? 0) + (r?.length ?? 0) === 0) throw bad("names nobody");
  return {
    ...(u === undefined ? {} : { users: u }),
    ...(r === undefined ? {} : { roles: r }),
    ...(xu === undefined ? {} : { exceptUsers: xu }),
    ...(xs === undefined ? {} : { exceptSessions: xs }),
  };
}
