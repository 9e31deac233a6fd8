import { randomFillSync } from "node:crypto";
import { SPAN_ID, TRACE_ID } from "../types/trace.js";

// Ids are written into a Buffer and read back as one flat string. Building them by string
// concatenation (as `crypto.randomUUID()` does internally) leaves a tree of string pieces
// behind that retains ~490 bytes per id instead of ~60, which matters for a per-request object.
const pool = Buffer.allocUnsafe(4096);
let poolOffset = pool.length;
const uuidOut = Buffer.allocUnsafe(36);
const HEX_CODES = Buffer.from("0123456789abcdef", "latin1");

function randomOffset(bytes: number): number {
  if (poolOffset + bytes > pool.length) {
    randomFillSync(pool);
    poolOffset = 0;
  }
  const at = poolOffset;
  poolOffset += bytes;
  return at;
}

// `hexSlice` skips the encoding dispatch of `toString("hex", ...)`; fall back where it is absent.
const hexSlice: (start: number, end: number) => string =
  typeof (pool as unknown as { hexSlice?: unknown }).hexSlice === "function"
    ? (start, end) =>
        (pool as unknown as { hexSlice(s: number, e: number): string }).hexSlice(start, end)
    : (start, end) => pool.toString("hex", start, end);

function randomHex(bytes: number): string {
  const at = randomOffset(bytes);
  return hexSlice(at, at + bytes);
}

/** A new request id: a random (version 4) UUID from the crypto source. */
export function newRequestId(): string {
  const at = randomOffset(16);
  let j = 0;
  for (let i = 0; i < 16; i++) {
    let byte = pool[at + i] as number;
    if (i === 6) byte = (byte & 0x0f) | 0x40;
    else if (i === 8) byte = (byte & 0x3f) | 0x80;
    if (i === 4 || i === 6 || i === 8 || i === 10) uuidOut[j++] = 0x2d;
    uuidOut[j++] = HEX_CODES[byte >> 4] as number;
    uuidOut[j++] = HEX_CODES[byte & 15] as number;
  }
  return uuidOut.toString("latin1", 0, 36);
}

/** A new W3C trace id: 32 lowercase hex digits, never all zeros. */
export function newTraceId(): string {
  const id = randomHex(16);
  return id === "00000000000000000000000000000000" ? newTraceId() : id;
}

/** A new W3C span id: 16 lowercase hex digits, never all zeros. */
export function newSpanId(): string {
  const id = randomHex(8);
  return id === "0000000000000000" ? newSpanId() : id;
}

/** The parts of a W3C `traceparent` header this library uses. */
export interface TraceParent {
  readonly traceId: string;
  readonly parentSpanId: string;
  readonly sampled: boolean;
}

/**
 * Parses a W3C `traceparent` header (`00-<trace id>-<parent span id>-<flags>`).
 * Returns `null` for anything malformed, as the W3C spec requires (start a new trace instead).
 *
 * @example
 * parseTraceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
 */
export function parseTraceparent(header: string | undefined | null): TraceParent | null {
  if (typeof header !== "string") return null;
  const parts = header.trim().toLowerCase().split("-");
  if (parts.length < 4) return null;
  const [version, traceId, spanId, flags] = parts as [string, string, string, string];
  if (!/^[0-9a-f]{2}$/.test(version) || version === "ff") return null;
  if (version === "00" && parts.length !== 4) return null;
  if (!TRACE_ID.test(traceId) || /^0+$/.test(traceId)) return null;
  if (!SPAN_ID.test(spanId) || /^0+$/.test(spanId)) return null;
  if (!/^[0-9a-f]{2}$/.test(flags)) return null;
  return { traceId, parentSpanId: spanId, sampled: (parseInt(flags, 16) & 1) === 1 };
}

/** Formats a `traceparent` header value for outgoing calls. */
export function formatTraceparent(traceId: string, spanId: string, sampled = true): string {
  return `00-${traceId}-${spanId}-${sampled ? "01" : "00"}`;
}
