import type { IncomingMessage, ServerResponse } from "node:http";
import type { Attributes } from "../types/trace.js";
import type { TraceDetail } from "../tracing/trace-store.js";

/** The body of every refusal or failure of the viewer's API. */
export interface ApiError {
  readonly error: { readonly code: string; readonly message: string };
}

/** Longest string the page gets for an attribute value, or for one item of an array value. */
const MAX_VALUE = 2_000;
/** Most items of an array value the page gets; a last item says how many more there were. */
const MAX_ITEMS = 100;
/** Most attributes of one span or event the page gets; the rest are counted under OMITTED. */
const MAX_ATTRIBUTES = 200;
const OMITTED = "nerva.viewer.omitted_attributes";
const MAX_NAME = 256;

/**
 * Writes `body` as JSON. `<` is written as `\u003c`, so that no value, even one read as HTML by a
 * browser that ignored the content type, can open a tag.
 */
export function sendJson(
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

/** Text of a value that is not a string, number or boolean, cut; never throws. */
function textOf(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

/**
 * One attribute value as the page gets it. Attributes are typed flat, but user code and other
 * tracers put arrays and objects there at run time: array items are bounded like values (and
 * their number), anything else becomes its cut JSON text.
 */
function valueForPage(value: unknown, inArray = false): unknown {
  if (typeof value === "string") return cut(value, MAX_VALUE);
  if (typeof value === "number" || typeof value === "boolean" || value === null) return value;
  if (Array.isArray(value) && !inArray) {
    const items = value.slice(0, MAX_ITEMS).map((v: unknown) => valueForPage(v, true));
    if (value.length > MAX_ITEMS) items.push(`… (${value.length - MAX_ITEMS} more items)`);
    return items;
  }
  // A nested array or an object: its JSON would be unbounded, so its text is cut instead.
  return cut(textOf(value), MAX_VALUE);
}

function attributesForPage(attrs: Readonly<Attributes>): Attributes {
  const out: Record<string, unknown> = {};
  const keys = Object.keys(attrs);
  for (const key of keys.slice(0, MAX_ATTRIBUTES)) {
    out[cut(key, MAX_NAME)] = valueForPage(attrs[key]);
  }
  if (keys.length > MAX_ATTRIBUTES) out[OMITTED] = keys.length - MAX_ATTRIBUTES;
  return out as Attributes;
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
