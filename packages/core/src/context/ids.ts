import { randomUUID } from "node:crypto";
import { SPAN_ID, TRACE_ID } from "../types/trace.js";

/** A new request id (a random UUID). */
export function newRequestId(): string {
  return randomUUID();
}

/** A new W3C trace id: 32 lowercase hex digits, never all zeros. */
export function newTraceId(): string {
  return randomUUID().replaceAll("-", "");
}

const HEX = "0123456789abcdef";

/**
 * A new 16-hex-digit span id. Span ids only need to be unique within a trace, so a fast
 * non-cryptographic source is enough here (request and trace ids use crypto).
 */
export function newSpanId(): string {
  let id = "";
  for (let i = 0; i < 2; i++) {
    let n = (Math.random() * 0x1_0000_0000) >>> 0;
    for (let j = 0; j < 8; j++) {
      id += HEX[n & 15];
      n >>>= 4;
    }
  }
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
