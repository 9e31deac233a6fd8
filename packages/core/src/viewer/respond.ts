import type { IncomingMessage, ServerResponse } from "node:http";
import type { Attributes } from "../types/trace.js";
import type { TraceDetail } from "../tracing/trace-store.js";

/** The body of every refusal or failure of the viewer's API. */
export interface ApiError {
  readonly error: { readonly code: string; readonly message: string };
}

/** Longest attribute value the page gets; a span's attributes are not bounded otherwise. */
const MAX_VALUE = 2_000;
const MAX_NAME = 256;

/**
 * Writes `body` as JSON. `<` is written as `\u003c`, so that no value, even one read as HTML by a
 * browser that ignored the content type, can open a tag.
 */
export function sendJSON(
  req: IncomingMessage | null,
  res: ServerResponse,
  status: number,
  body: unknown,
): void {
  const text = JSON.stringify(body).replace(/</g, "\\u003c");
  res.writeHead(status, {
    "content-type": "application/json; charset=utf-8",
    "cache-control": "no-store",
    "x-content-type-options": "nosniff",
  });
  res.end(req?.method === "HEAD" ? undefined : text);
}

const cut = (text: string, max: number): string =>
  text.length <= max ? text : `${text.slice(0, max)}… (${text.length - max} more characters)`;

function attributesForPage(attrs: Readonly<Attributes>): Attributes {
  const out: Attributes = {};
  for (const key of Object.keys(attrs)) {
    const value = attrs[key]!;
    out[cut(key, MAX_NAME)] = typeof value === "string" ? cut(value, MAX_VALUE) : value;
  }
  return out;
}

/** A trace summary as the page gets it: a long root name cut. */
export function summaryForPage<T extends { rootName: string }>(summary: T): T {
  return summary.rootName.length <= MAX_NAME
    ? summary
    : { ...summary, rootName: cut(summary.rootName, MAX_NAME) };
}

/** A trace as the page gets it: long names and attribute values cut, with how much was cut. */
export function detailForPage(detail: TraceDetail): TraceDetail {
  return {
    ...detail,
    rootName: cut(detail.rootName, MAX_NAME),
    spans: detail.spans.map((s) => ({
      ...s,
      name: cut(s.name, MAX_NAME),
      error: s.error === null ? null : cut(s.error, MAX_VALUE),
      attributes: attributesForPage(s.attributes),
    })),
    events: detail.events.map((e) => ({
      ...e,
      name: cut(e.name, MAX_NAME),
      attributes: attributesForPage(e.attributes),
    })),
  };
}
