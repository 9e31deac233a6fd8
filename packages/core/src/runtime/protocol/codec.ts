import type { z } from "zod";
import { ErrorCode, NervaError } from "../../errors.js";
import {
  DEFAULT_JSON_LIMITS,
  jsonLimitViolation,
  type JsonLimits,
} from "../../internal/json-limits.js";
import type { HostFrameInput, WorkerFrameInput } from "./frames.js";

/** Default largest frame a decoder accepts: 16 MiB. */
export const DEFAULT_MAX_FRAME_BYTES = 16 * 1024 * 1024;

/**
 * Default bounds on the JSON of one frame: one level for the frame itself, then the 64 levels
 * and million values any value crossing a process boundary (an AgentInput, an AgentResult, an
 * ExecContext wire document) may use. Checked iteratively before the schema runs, so nesting
 * that would overflow the stack in validation is refused instead.
 */
export const DEFAULT_FRAME_JSON_LIMITS: JsonLimits = Object.freeze({
  maxDepth: DEFAULT_JSON_LIMITS.maxDepth + 1,
  maxNodes: DEFAULT_JSON_LIMITS.maxNodes,
});

const NEWLINE = 0x0a;
const CR = 0x0d;
const PREVIEW_CHARS = 120;

/** Why a decoder rejected some bytes; found in `error.details.reason`. */
export const FrameErrorReason = {
  /** A line grew past `maxFrameBytes`; it is skipped up to its newline. */
  TOO_LARGE: "too_large",
  /** A line is not valid JSON. */
  MALFORMED_JSON: "malformed_json",
  /** A line is JSON nested deeper, or holding more values, than the decoder's `jsonLimits`. */
  TOO_COMPLEX: "too_complex",
  /** A line is JSON but not a frame the schema accepts. */
  INVALID_FRAME: "invalid_frame",
  /** The stream ended in the middle of a frame. */
  TRUNCATED: "truncated",
  /** `onFrame` threw; the decoder carries on with the next frame. */
  CONSUMER_FAILED: "consumer_failed",
} as const;
export type FrameErrorReason = (typeof FrameErrorReason)[keyof typeof FrameErrorReason];

/** Options of {@link FrameDecoder}. */
export interface FrameDecoderOptions<F> {
  /** Validates every frame (e.g. `WorkerFrameSchema`); frames that fail are reported, not delivered. */
  readonly schema: z.ZodType<F>;
  /** Largest accepted frame in bytes, newline excluded. Default 16 MiB. */
  readonly maxFrameBytes?: number;
  /** Deepest nesting and most values a frame may hold. Default {@link DEFAULT_FRAME_JSON_LIMITS}. */
  readonly jsonLimits?: JsonLimits;
  /** Receives each valid frame with its size in bytes (newline excluded). */
  readonly onFrame: (frame: F, bytes: number) => void;
  /** Receives a `NervaError` (code INVALID_INPUT, `details.reason` a {@link FrameErrorReason}). */
  readonly onError: (error: NervaError) => void;
}

/**
 * Encodes one frame as a line of NDJSON (JSON text + `\n`). JSON escapes newlines inside strings,
 * so a frame is always exactly one line.
 *
 * @example
 * socket.write(encodeFrame({ type: "chunk", id: "inv-1", text: "hello " }));
 */
export function encodeFrame(frame: HostFrameInput | WorkerFrameInput): string {
  return JSON.stringify(frame) + "\n";
}

function preview(text: string): string {
  return text.length <= PREVIEW_CHARS ? text : `${text.slice(0, PREVIEW_CHARS)}…`;
}

/**
 * Turns a byte stream of NDJSON frames into validated frame objects. Robust against what a
 * misbehaving peer can send: frames split across reads (or several in one read), multi-byte
 * characters split across reads, `\r\n` line ends, blank lines, oversized lines (reported once,
 * then skipped up to the next newline without buffering them), malformed JSON, JSON nested too
 * deep for validation (checked without recursing, before the schema runs) and frames the schema
 * rejects. Every problem is reported through `onError`; nothing throws.
 *
 * @example
 * const decoder = new FrameDecoder({
 *   schema: WorkerFrameSchema,
 *   onFrame: (frame) => console.log(frame.type),
 *   onError: (err) => console.error(err.message),
 * });
 * socket.on("data", (bytes) => decoder.push(bytes));
 * socket.on("end", () => decoder.end());
 */
export class FrameDecoder<F> {
  readonly maxFrameBytes: number;
  readonly #limits: JsonLimits;
  readonly #schema: z.ZodType<F>;
  readonly #onFrame: (frame: F, bytes: number) => void;
  readonly #onError: (error: NervaError) => void;
  #pending: Buffer[] = [];
  #pendingBytes = 0;
  #discarding = false;

  constructor(options: FrameDecoderOptions<F>) {
    const max = options.maxFrameBytes ?? DEFAULT_MAX_FRAME_BYTES;
    if (!Number.isInteger(max) || max < 1) {
      throw new NervaError(
        ErrorCode.INVALID_OPTIONS,
        `Invalid maxFrameBytes: must be a positive integer (got ${String(max)}).`,
        { issues: [{ path: "maxFrameBytes", message: "must be a positive integer" }] },
      );
    }
    this.maxFrameBytes = max;
    this.#limits = options.jsonLimits ?? DEFAULT_FRAME_JSON_LIMITS;
    this.#schema = options.schema;
    this.#onFrame = options.onFrame;
    this.#onError = options.onError;
  }

  /** Bytes buffered for a frame whose newline has not arrived yet. */
  get bufferedBytes(): number {
    return this.#pendingBytes;
  }

  /** Feeds bytes as they arrive. Complete frames are delivered synchronously, in order. */
  push(chunk: Buffer | Uint8Array | string): void {
    const bytes =
      typeof chunk === "string"
        ? Buffer.from(chunk, "utf8")
        : Buffer.isBuffer(chunk)
          ? chunk
          : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    let start = 0;
    while (start < bytes.length) {
      const nl = bytes.indexOf(NEWLINE, start);
      if (nl === -1) {
        this.#hold(bytes.subarray(start));
        return;
      }
      const piece = bytes.subarray(start, nl);
      start = nl + 1;
      if (this.#discarding) {
        this.#discarding = false;
        continue;
      }
      if (this.#pendingBytes + piece.length > this.maxFrameBytes) {
        this.#clear();
        this.#tooLarge(this.#pendingBytes + piece.length);
        continue;
      }
      let line: Buffer;
      if (this.#pendingBytes === 0) {
        line = piece;
      } else {
        this.#pending.push(piece);
        line = Buffer.concat(this.#pending, this.#pendingBytes + piece.length);
        this.#clear();
      }
      this.#line(line);
    }
  }

  /**
   * Signals the end of the stream. A partial frame left in the buffer is reported as TRUNCATED
   * (a peer that dies mid-write must not be mistaken for one that finished).
   */
  end(): void {
    const left = this.#pendingBytes;
    const pending = this.#pending;
    const discarding = this.#discarding;
    this.#clear();
    this.#discarding = false;
    if (discarding) return;
    if (left > 0) {
      if (Buffer.concat(pending).toString("utf8").trim().length === 0) return;
      this.#fail(
        FrameErrorReason.TRUNCATED,
        `Stream ended in the middle of a frame (${left} bytes without a trailing newline).`,
      );
    }
  }

  #hold(rest: Buffer): void {
    if (this.#discarding || rest.length === 0) return;
    if (this.#pendingBytes + rest.length > this.maxFrameBytes) {
      const size = this.#pendingBytes + rest.length;
      this.#clear();
      this.#discarding = true;
      this.#tooLarge(size);
      return;
    }
    // Copy: the caller may reuse its buffer after push() returns.
    this.#pending.push(Buffer.from(rest));
    this.#pendingBytes += rest.length;
  }

  #clear(): void {
    this.#pending = [];
    this.#pendingBytes = 0;
  }

  #tooLarge(size: number): void {
    this.#fail(
      FrameErrorReason.TOO_LARGE,
      `Frame too large: over ${this.maxFrameBytes} bytes (at least ${size} received); it was dropped.`,
    );
  }

  #line(raw: Buffer): void {
    let end = raw.length;
    if (end > 0 && raw[end - 1] === CR) end--;
    const bytes = end;
    const text = raw.toString("utf8", 0, end);
    if (text.trim().length === 0) return;
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (err) {
      this.#fail(
        FrameErrorReason.MALFORMED_JSON,
        `Malformed frame (not JSON: ${(err as Error).message}): ${preview(text)}`,
      );
      return;
    }
    // Validation recurses: refuse what would overflow the stack there, without recursing here.
    const violation = jsonLimitViolation(value, this.#limits);
    if (violation !== null) {
      this.#fail(
        FrameErrorReason.TOO_COMPLEX,
        `Frame too complex (${violation}): ${preview(text)}`,
      );
      return;
    }
    let parsed: ReturnType<z.ZodType<F>["safeParse"]>;
    try {
      parsed = this.#schema.safeParse(value);
    } catch (err) {
      // Only a custom schema (a refinement that throws) gets here; never let it reach the caller.
      this.#fail(
        FrameErrorReason.INVALID_FRAME,
        `Invalid frame (validation failed: ${err instanceof Error ? err.message : String(err)}): ${preview(text)}`,
        err,
      );
      return;
    }
    if (!parsed.success) {
      const detail = parsed.error.issues
        .map((i) => `${["frame", ...i.path.map(String)].join(".")}: ${i.message}`)
        .join("; ");
      this.#fail(FrameErrorReason.INVALID_FRAME, `Invalid frame (${detail}): ${preview(text)}`);
      return;
    }
    try {
      this.#onFrame(parsed.data, bytes);
    } catch (err) {
      this.#fail(
        FrameErrorReason.CONSUMER_FAILED,
        `Frame handler failed: ${err instanceof Error ? err.message : String(err)}`,
        err,
      );
    }
  }

  #fail(reason: FrameErrorReason, message: string, cause?: unknown): void {
    this.#onError(
      new NervaError(ErrorCode.INVALID_INPUT, message, {
        details: { reason },
        ...(cause === undefined ? {} : { cause }),
      }),
    );
  }
}
