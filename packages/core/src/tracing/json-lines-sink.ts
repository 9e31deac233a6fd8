import { z } from "zod";
import { ErrorCode, messageOf, parseOrThrow } from "../errors.js";
import type { ContextEvent } from "../context/events.js";
import { Span } from "../context/span.js";
import { eventJson, spanJson } from "./log-fields.js";
import type { TraceSink } from "./sink.js";

/** Where lines go when no `write` is given: a stream such as `process.stdout` or a file stream. */
export interface LineStream {
  /** Returns false when the stream's buffer is full (Node's Writable contract). */
  write(chunk: string): boolean;
  once(event: "drain" | "error" | "close", listener: () => void): unknown;
  off(event: "drain" | "error" | "close", listener: () => void): unknown;
}

const fn = <T>(label: string) =>
  z.custom<T>((v) => typeof v === "function", `must be a function (${label})`);

const OptionsSchema = z
  .object({
    write: fn<(line: string) => void | PromiseLike<unknown>>("line => void | Promise").optional(),
    stream: z
      .custom<LineStream>(
        (v) =>
          typeof v === "object" &&
          v !== null &&
          typeof (v as LineStream).write === "function" &&
          typeof (v as LineStream).once === "function" &&
          typeof (v as LineStream).off === "function",
        "must be a writable stream (write, once, off)",
      )
      .optional(),
    maxBacklog: z.number().int().positive().max(10_000_000).default(10_000),
    onError: fn<(error: unknown) => void>("error => void").optional(),
  })
  .strict()
  .refine((o) => o.write === undefined || o.stream === undefined, {
    message: "give write or stream, not both",
    path: ["write"],
  });

/** Options of {@link JsonLinesTraceSink}. */
export interface JsonLinesTraceSinkOptions {
  /**
   * Receives each line (one JSON object, no trailing newline). May return a promise: the next
   * line waits for it. Default: `stream`.
   */
  write?: (line: string) => void | PromiseLike<unknown>;
  /** Receives batches of newline-terminated lines, honouring `drain`. Default: `process.stdout`. */
  stream?: LineStream;
  /** Most lines waiting to be written; past it new lines are dropped and counted. Default 10,000. */
  maxBacklog?: number;
  /** Told about the first line that could not be serialised or written (default: one warning). */
  onError?: (error: unknown) => void;
}

type Batch = (lines: string[]) => void | PromiseLike<unknown>;

const isThenable = (v: unknown): v is PromiseLike<unknown> =>
  typeof v === "object" && v !== null && typeof (v as PromiseLike<unknown>).then === "function";

/** Resolves when `stream` drains, errors or closes (a broken stream must not stall the sink). */
function settled(stream: LineStream): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      stream.off("drain", done);
      stream.off("error", done);
      stream.off("close", done);
      resolve();
    };
    stream.once("drain", done);
    stream.once("error", done);
    stream.once("close", done);
  });
}

/** Calls `write` for each line; a thenable holds the rest until it settles. */
function eachLine(write: (line: string) => unknown, fail: (err: unknown) => void): Batch {
  const from = (lines: string[], start: number): void | Promise<void> => {
    for (let i = start; i < lines.length; i++) {
      let r: unknown;
      try {
        r = write(lines[i] as string);
      } catch (err) {
        fail(err);
        continue;
      }
      if (isThenable(r)) {
        return Promise.resolve(r).then(
          () => from(lines, i + 1),
          (err: unknown) => {
            fail(err);
            return from(lines, i + 1);
          },
        );
      }
    }
  };
  return (lines) => from(lines, 0);
}

/**
 * Structured JSON logs of a trace: one line per ended span and per event, in the order they
 * happen (a span's line is written when it ends, so children come before their parent). Fields:
 * `ts`, `kind` (`"span"` | `"event"`), `trace_id`, `span_id`, `parent_id`, `request_id`, `name`,
 * `duration_ms`, `status`, `error`, `attrs`, `usage` and `total_usage` (event lines: `ts`, `kind`,
 * `trace_id`, `span_id`, `request_id`, `name`, `attrs`).
 *
 * Nothing is serialised or written on the request path: spans are queued and written in batches
 * after the current I/O phase (`setImmediate`). A slow writer never grows the heap without
 * bound: at most `maxBacklog` lines wait (counting the batch being written); past it new lines
 * are dropped and counted in `droppedLines`. A writer that throws or rejects loses that line
 * (counted in `writeErrors` and `droppedLines`, the first error reported) and the sink goes on.
 *
 * @example
 * const sink = new JsonLinesTraceSink(); // to stdout
 * const files = new JsonLinesTraceSink({ stream: createWriteStream("trace.jsonl") });
 * const ctx = ExecContext.create({ traceSink: combineSinks(sink, files) });
 */
export class JsonLinesTraceSink implements TraceSink {
  /** Lines handed to the writer. */
  writtenLines = 0;
  /** Lines lost: backlog full, after shutdown, or a failed serialisation or write. */
  droppedLines = 0;
  /** Lines whose serialisation or write threw (or whose write rejected). */
  writeErrors = 0;
  readonly onError: ((error: unknown) => void) | undefined;
  readonly #maxBacklog: number;
  readonly #batch: Batch;
  #queue: (Span | ContextEvent)[] = [];
  /** Lines of the batch being written (they count against the backlog until it settles). */
  #inFlight = 0;
  #writing = false;
  #scheduled = false;
  #closed = false;
  #idle: (() => void)[] = [];

  constructor(options: JsonLinesTraceSinkOptions = {}) {
    const o = parseOrThrow(
      OptionsSchema,
      options,
      ErrorCode.INVALID_OPTIONS,
      "options",
      "Pass { write?: (line) => void | Promise, stream?: Writable, maxBacklog?: number, onError? }.",
    );
    this.#maxBacklog = o.maxBacklog;
    this.onError = o.onError;
    if (o.write !== undefined) {
      this.#batch = eachLine(o.write, (err) => this.#lost(err, 1, true));
    } else {
      const stream = o.stream ?? (process.stdout as LineStream);
      this.#batch = (lines) =>
        stream.write(`${lines.join("\n")}\n`) ? undefined : settled(stream);
    }
  }

  onSpanEnd(span: Span): void {
    this.#push(span);
  }

  onEvent(event: ContextEvent): void {
    this.#push(event);
  }

  /** Writes every queued line now and resolves once the writer has taken them all. */
  forceFlush(): Promise<void> {
    this.#pump();
    if (!this.#writing && this.#queue.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idle.push(resolve));
  }

  /** Flushes; spans and events that end later are dropped (and counted). */
  shutdown(): Promise<void> {
    this.#closed = true;
    return this.forceFlush();
  }

  #push(item: Span | ContextEvent): void {
    if (this.#closed || this.#queue.length + this.#inFlight >= this.#maxBacklog) {
      this.droppedLines++;
      return;
    }
    this.#queue.push(item);
    if (!this.#scheduled && !this.#writing) {
      this.#scheduled = true;
      setImmediate(() => {
        this.#scheduled = false;
        this.#pump();
      });
    }
  }

  #pump(): void {
    while (!this.#writing && this.#queue.length > 0) {
      const items = this.#queue;
      this.#queue = [];
      const lines: string[] = [];
      for (const item of items) {
        try {
          lines.push(item instanceof Span ? spanJson(item) : eventJson(item));
        } catch (err) {
          this.#lost(err, 1, false);
        }
      }
      if (lines.length === 0) continue;
      this.writtenLines += lines.length;
      let r: void | PromiseLike<unknown>;
      try {
        r = this.#batch(lines);
      } catch (err) {
        // Only a stream's own write can throw here (a `write` option's throws are per line).
        this.#lost(err, lines.length, true);
        continue;
      }
      if (isThenable(r)) {
        this.#writing = true;
        this.#inFlight = lines.length;
        const resume = (): void => {
          this.#writing = false;
          this.#inFlight = 0;
          this.#pump();
        };
        // Neither writer rejects (per-line failures are caught, a stream's wait only resolves).
        void Promise.resolve(r).then(resume, resume);
        return;
      }
    }
    if (!this.#writing && this.#queue.length === 0) {
      for (const resolve of this.#idle.splice(0)) resolve();
    }
  }

  /** `count` lines failed (`handed`: after they were counted as written). */
  #lost(err: unknown, count: number, handed: boolean): void {
    this.writeErrors++;
    this.droppedLines += count;
    if (handed) this.writtenLines -= count;
    if (this.writeErrors > 1) return;
    if (this.onError !== undefined) {
      try {
        this.onError(err);
        return;
      } catch {
        // an onError that throws falls back to the warning below
      }
    }
    process.emitWarning(
      `Nerva JsonLinesTraceSink: a line could not be written ("${messageOf(err)}"). Later failures are only counted (writeErrors).`,
      { code: "NERVA_TRACE_SINK" },
    );
  }
}
