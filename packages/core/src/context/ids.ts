import { randomFillSync } from "node:crypto";
import { SPAN_ID, TRACE_ID } from "../types/trace.js";

// Ids are built from a pool of random bytes by one String.fromCharCode call: a flat string (a
// `randomUUID()`-style concatenation leaves a tree of pieces retaining ~490 bytes per id instead of
// ~60), and no call into C++ (Buffer#hexSlice costs ~4x more per id).
// 64 KiB: filling it costs ~25 µs once per ~1,000 requests (per byte, 5x less than 4 KiB fills).
const pool = Buffer.allocUnsafe(65536);
let poolOffset = pool.length;
const HEX = Array.from("0123456789abcdef", (c) => c.charCodeAt(0));
const fromCharCodes = String.fromCharCode;
/** Reused character-code arrays, one per id length. */
const codes16 = new Array<number>(16).fill(0);
const codes32 = new Array<number>(32).fill(0);
const codes36 = new Array<number>(36).fill(0);

function randomOffset(bytes: number): number {
  if (poolOffset + bytes > pool.length) {
    randomFillSync(pool);
    poolOffset = 0;
  }
  const at = poolOffset;
  poolOffset += bytes;
  return at;
}

/** A new request id: a random (version 4) UUID from the crypto source. */
export function newRequestId(): string {
  const at = randomOffset(16);
  const out = codes36;
  let j = 0;
  for (let i = 0; i < 16; i++) {
    let byte = pool[at + i] as number;
    if (i === 6) byte = (byte & 0x0f) | 0x40;
    else if (i === 8) byte = (byte & 0x3f) | 0x80;
    if (i === 4 || i === 6 || i === 8 || i === 10) out[j++] = 0x2d;
    out[j++] = HEX[byte >> 4] as number;
    out[j++] = HEX[byte & 15] as number;
  }
  return fromCharCodes(...out);
}

/** A new W3C trace id: 32 lowercase hex digits, never all zeros. */
export function newTraceId(): string {
  const at = randomOffset(16);
  const out = codes32;
  let any = 0;
  for (let i = 0; i < 16; i++) {
    const byte = pool[at + i] as number;
    any |= byte;
    out[2 * i] = HEX[byte >> 4] as number;
    out[2 * i + 1] = HEX[byte & 15] as number;
  }
  return any === 0 ? newTraceId() : fromCharCodes(...out);
}

/** A new W3C span id: 16 lowercase hex digits, never all zeros. */
export function newSpanId(): string {
  const high = randomInt32();
  const low = randomInt32();
  return high === 0 && low === 0 ? newSpanId() : spanIdOf(high, low);
}

/**
 * 32 random bits (a signed int32) from the same crypto source, for ids that are formatted only
 * when read (spans: most are never serialised). See {@link spanIdOf}.
 */
export function randomInt32(): number {
  const at = randomOffset(4);
  const p = pool;
  return (
    (p[at] as number) |
    ((p[at + 1] as number) << 8) |
    ((p[at + 2] as number) << 16) |
    ((p[at + 3] as number) << 24)
  );
}

/** The span id (16 lowercase hex digits) made of two int32 halves, high first. */
export function spanIdOf(high: number, low: number): string {
  const out = codes16;
  for (let i = 0; i < 8; i++) {
    out[i] = HEX[(high >>> (28 - 4 * i)) & 15] as number;
    out[8 + i] = HEX[(low >>> (28 - 4 * i)) & 15] as number;
  }
  return fromCharCodes(...out);
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
