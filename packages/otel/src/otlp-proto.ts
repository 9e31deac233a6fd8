import type { Attributes } from "@opentelemetry/api";
import { ExportResultCode, hrTimeToMilliseconds, type ExportResult } from "@opentelemetry/core";
import type { ReadableSpan, SpanExporter } from "@opentelemetry/sdk-trace-base";
import { ErrorCode, NervaError } from "@nerva/core";
import { isSpan, type ContextEvent, type Span } from "@nerva/core/context";
import {
  CONTENT_KEYS,
  DEFAULT_WORKFLOW,
  MAPPING_KEYS,
  mapped,
  nervaKey,
  operationOf,
  otelAttributes,
  otelKind,
  otelNameSuffix,
  otelStatus,
  spent,
  type GenAIOperation,
  type MappingSettings,
} from "./mapping.js";
import { ProtoWriter, asciiAt, copyAt, hexAt, le32, varint32 } from "./proto-writer.js";
import { NervaReadableSpan, type ExportSettings } from "./readable-span.js";
import { load } from "./module-url.js";

/** What the sink's batch queue holds: Nerva spans as they ended, and the app's own spans. */
export type BatchItem = Span | ReadableSpan;

interface Serializer {
  serializeRequest(items: BatchItem[]): Uint8Array | undefined;
  deserializeResponse(data: Uint8Array): unknown;
}
interface Delegate {
  export(items: BatchItem[], done: (result: ExportResult) => void): void;
  forceFlush(): Promise<void>;
  shutdown(): Promise<void>;
}
interface NodeHttpModule {
  convertLegacyHttpOptions(
    config: { url?: string },
    signal: string,
    path: string,
    headers: Record<string, string>,
  ): unknown;
  createOtlpHttpExportDelegate(
    options: unknown,
    serializer: Serializer,
    componentType: string,
    metricsHelper: unknown,
  ): Delegate;
}
interface TransformerModule {
  ProtobufTraceSerializer: {
    serializeRequest(spans: ReadableSpan[]): Uint8Array | undefined;
    deserializeResponse(data: Uint8Array): unknown;
  };
  TraceExporterMetricsHelper: unknown;
}

/** Spans gathered before a request leaves, or bytes, whichever comes first. */
const SEND_SPANS = 2048;
const SEND_BYTES = 1024 * 1024;
/** The longest a gathered span waits for more (OpenTelemetry's `OTEL_BSP_SCHEDULE_DELAY`). */
const SEND_DELAY_MS = 5000;

/**
 * The sink's default exporter: OTLP/HTTP protobuf written straight from Nerva's spans (no
 * ReadableSpan, no attribute object per span, one pass into a buffer), sent by OpenTelemetry's
 * own HTTP transport (`@opentelemetry/otlp-exporter-base`), so the endpoint, headers, timeout,
 * compression and retries are the official exporter's, from the same `OTEL_EXPORTER_OTLP_*`
 * variables. The app's own spans in a batch (a `NodeSDK` sharing the sink's processor) are
 * written by OpenTelemetry's serializer, in the same request.
 *
 * Each batch the queue hands over (64 spans: the sink hands this exporter small batches) is
 * written at once, so that the queue holds its spans briefly (spans kept alive across
 * collections cost the app GC time); the bytes gather until 2048 spans or 1 MiB (or 5 s, or a
 * flush), then leave as one request: each request costs the app ~0.35 ms of CPU in the
 * transport whatever its size.
 */
export class NervaOtlpExporter implements SpanExporter {
  readonly #delegate: Delegate;
  readonly #writer = new ProtoWriter();
  #settings: ExportSettings | null = null;
  #report: (result: ExportResult) => void = () => undefined;
  /** Spans written and not sent yet. */
  #gathered = 0;
  #timer: NodeJS.Timeout | null = null;

  constructor(url?: string) {
    // The transport and the serializer for the app's own spans: loaded only by the default exporter.
    const http = load("@opentelemetry/otlp-exporter-base/node-http") as NodeHttpModule;
    const transformer = load("@opentelemetry/otlp-transformer") as TransformerModule;
    const theirs = transformer.ProtobufTraceSerializer;
    this.#delegate = http.createOtlpHttpExportDelegate(
      http.convertLegacyHttpOptions(url === undefined ? {} : { url }, "TRACES", "v1/traces", {
        "Content-Type": "application/x-protobuf",
      }),
      {
        // What was gathered: the delegate asks when it sends.
        serializeRequest: () => (this.#writer.pos === 0 ? undefined : this.#writer.take()),
        deserializeResponse: (data) => theirs.deserializeResponse(data),
      },
      "otlp_http_span_exporter",
      transformer.TraceExporterMetricsHelper,
    );
    this.#foreign = theirs.serializeRequest;
  }

  readonly #foreign: (spans: ReadableSpan[]) => Uint8Array | undefined;

  /**
   * Binds the exporter to the settings (resource, scope, mapping) of the sink that owns it, and
   * to who is told how a request sent on the timer went (nobody awaits it).
   */
  attach(settings: ExportSettings, report: (result: ExportResult) => void): void {
    this.#settings = settings;
    this.#report = report;
  }

  export(items: ReadableSpan[], done: (result: ExportResult) => void): void {
    const settings = this.#settings;
    if (settings === null) {
      throw new NervaError(ErrorCode.INTERNAL, "NervaOtlpExporter used before attach()");
    }
    const w = this.#writer;
    const at = w.pos;
    try {
      appendTraceRequest(w, items, settings, this.#foreign);
    } catch (err) {
      w.pos = at; // what the failed batch wrote is dropped, what was gathered before is kept
      throw err;
    }
    this.#gathered += items.length;
    if (this.#gathered >= SEND_SPANS || this.#writer.pos >= SEND_BYTES) return this.#send(done);
    // Written, not sent yet: a failure of the request that carries them is reported then.
    done({ code: ExportResultCode.SUCCESS });
    if (this.#timer === null && this.#gathered > 0) {
      // The 5 s count from when the oldest of these spans ended, not from now: the queue may
      // already have held them up to 5 s, and two waits in series would make it 10.
      const delay = Math.max(0, oldestEndMs(items) + SEND_DELAY_MS - Date.now());
      this.#timer = setTimeout(() => {
        this.#timer = null;
        this.#send(this.#report);
      }, delay);
      this.#timer.unref();
    }
  }

  /** Sends what was gathered, then waits for every request in flight; rejects if one failed. */
  async forceFlush(): Promise<void> {
    if (this.#gathered > 0) {
      await new Promise<void>((resolve, reject) =>
        this.#send((result) =>
          result.code === ExportResultCode.SUCCESS
            ? resolve()
            : reject(result.error ?? new Error("the exporter reported a failure")),
        ),
      );
    }
    await this.#delegate.forceFlush();
  }

  async shutdown(): Promise<void> {
    await this.forceFlush().catch(() => undefined); // reported by whoever flushed first
    await this.#delegate.shutdown();
  }

  #send(done: (result: ExportResult) => void): void {
    if (this.#timer !== null) {
      clearTimeout(this.#timer);
      this.#timer = null;
    }
    const count = this.#gathered;
    this.#gathered = 0;
    // The delegate counts the items (its own metrics) and asks the serializer for the bytes.
    this.#delegate.export({ length: count } as BatchItem[], done);
  }
}

/**
 * One OTLP `ExportTraceServiceRequest` (protobuf) of `items`: the Nerva spans under the sink's
 * resource and scope, written here; other spans by `foreign` (OpenTelemetry's serializer), its
 * bytes appended (concatenated protobuf messages merge: their `resource_spans` add up).
 * `undefined` when there is nothing to send.
 */
export function encodeTraceRequest(
  w: ProtoWriter,
  items: readonly BatchItem[],
  settings: ExportSettings,
  foreign: (spans: ReadableSpan[]) => Uint8Array | undefined,
): Uint8Array | undefined {
  w.pos = 0;
  appendTraceRequest(w, items, settings, foreign);
  return w.pos === 0 ? undefined : w.take();
}

/**
 * {@link encodeTraceRequest}, appended to what `w` holds: requests written one after the other
 * are one request (their `resource_spans` add up), sent when enough has gathered.
 */
export function appendTraceRequest(
  w: ProtoWriter,
  items: readonly BatchItem[],
  settings: ExportSettings,
  foreign: (spans: ReadableSpan[]) => Uint8Array | undefined,
): void {
  let others: ReadableSpan[] | null = null;
  let ours = 0;
  const start = w.pos;
  w.byte(0x0a); // ExportTraceServiceRequest.resource_spans
  const resourceSpans = w.begin();
  writeResource(w, settings);
  w.byte(0x12); // ResourceSpans.scope_spans
  const scopeSpans = w.begin();
  w.byte(0x0a); // ScopeSpans.scope
  const scope = w.begin();
  w.byte(0x0a);
  w.string(settings.scope.name);
  if (settings.scope.version) {
    w.byte(0x12);
    w.string(settings.scope.version);
  }
  w.end(scope);
  for (const item of items) {
    if (isSpan(item)) {
      writeSpan(w, item, item.parentSpan ?? item.parentId, undefined, undefined, settings);
      ours++;
    } else if (item instanceof NervaReadableSpan) {
      const extras = item.extras;
      writeSpan(w, item.source, item.exportedParent, extras?.events, extras?.mcpServer, settings);
      ours++;
    } else {
      (others ??= []).push(item);
    }
  }
  w.end(scopeSpans);
  const schemaUrl = settings.resource.schemaUrl;
  if (schemaUrl) {
    w.byte(0x1a); // ResourceSpans.schema_url
    w.string(schemaUrl);
  }
  w.end(resourceSpans);
  if (ours === 0) w.pos = start;
  const theirs = others === null ? undefined : foreign(others);
  if (theirs !== undefined) w.raw(theirs);
}

function writeResource(w: ProtoWriter, settings: ExportSettings): void {
  w.byte(0x0a); // ResourceSpans.resource
  const resource = w.begin();
  writeAttributes(w, settings.resource.attributes, 0x0a);
  w.end(resource);
}

/** One span as `ScopeSpans.spans`: what {@link NervaReadableSpan} shows, field for field. */
function writeSpan(
  w: ProtoWriter,
  span: Span,
  parent: Span | string | null,
  events: readonly ContextEvent[] | undefined,
  mcpServer: string | undefined,
  settings: ExportSettings,
): void {
  const op = operationOf(span.name);
  const remote = typeof parent === "string";
  const parentId = parent === null ? null : remote ? parent : parent.id;
  // Tag, length, ids: at most 41 bytes, written with one bounds check.
  w.reserve(48);
  let buf = w.buf;
  let p = w.pos;
  buf[p] = 0x12;
  const m = p + 1; // two bytes for the length: a span takes 128 bytes to 16 KiB
  p += 3;
  buf[p++] = 0x0a; // trace_id
  buf[p++] = 16;
  p = traceIdAt(buf, p, span.traceId);
  buf[p++] = 0x12; // span_id
  buf[p++] = 8;
  p = hexAt(buf, p, span.id, 8);
  if (parentId !== null) {
    buf[p++] = 0x22; // parent_span_id
    buf[p++] = 8;
    p = parentIdAt(buf, p, parentId);
  }
  buf[p++] = 0x2a; // name
  w.pos = p;
  if (op === null) w.string(span.name);
  else w.raw(nameBytes(op, otelNameSuffix(span, op)));
  w.reserve(20);
  buf = w.buf;
  p = w.pos;
  buf[p++] = 0x30; // kind: OTLP counts from 1 (0 is "unspecified")
  buf[p++] = otelKind(span, op) + 1;
  buf[p++] = 0x39; // start_time_unix_nano
  p = w.epochNanosAt(buf, p, span.startMs);
  buf[p++] = 0x41; // end_time_unix_nano
  p = w.epochNanosAt(buf, p, span.endMs ?? span.startMs);
  w.pos = p;
  if (!writeSpanAttributes(w, span, op, settings, mcpServer)) {
    // A span attribute the mapping overwrites (rare): the mapping's own object, key for key.
    w.pos = p;
    writeAttributes(w, otelAttributes(span, op, settings, mcpServer), 0x4a);
  }
  if (events !== undefined) {
    for (const e of events) {
      w.byte(0x5a); // events
      const em = w.begin();
      w.byte(0x09); // time_unix_nano
      w.epochNanos(e.timestampMs);
      w.byte(0x12);
      w.string(e.name);
      writeAttributes(w, e.attributes, 0x1a);
      w.end(em);
    }
  }
  if (span.status === "error") {
    const status = otelStatus(span);
    w.byte(0x7a); // status
    const sm = w.begin();
    if (status.message) {
      w.byte(0x12);
      w.string(status.message);
    }
    w.byte(0x18);
    w.uint32(status.code);
    w.end(sm);
  }
  w.reserve(6);
  buf = w.buf;
  p = w.pos;
  buf[p++] = 0x85; // flags (field 16, fixed32): sampled, and whether the parent is remote
  buf[p++] = 0x01;
  w.pos = le32(buf, p, remote ? 0x301 : 0x101);
  w.end(m, 2);
}

// The ids written last: a request's spans share their trace id, and siblings their parent's.
let traceHex = "";
const traceBytes = new Uint8Array(16);
let parentHex = "";
const parentBytes = new Uint8Array(8);

function traceIdAt(buf: Uint8Array, p: number, hex: string): number {
  if (hex !== traceHex) {
    hexAt(traceBytes, 0, hex, 16);
    traceHex = hex;
  }
  return copyAt(buf, p, traceBytes);
}

function parentIdAt(buf: Uint8Array, p: number, hex: string): number {
  if (hex !== parentHex) {
    hexAt(parentBytes, 0, hex, 8);
    parentHex = hex;
  }
  return copyAt(buf, p, parentBytes);
}

/**
 * `otelAttributes(span, ...)` written as `Span.attributes`, in the same order, without making
 * the object: one pass over the span's own attributes, then the mapping's. `false` (after
 * writing some) when a span attribute is one the mapping overwrites: the caller rewinds and
 * writes the mapping's object instead, which merges them as it does.
 */
function writeSpanAttributes(
  w: ProtoWriter,
  span: Span,
  op: GenAIOperation | null,
  settings: MappingSettings,
  mcpServer: string | undefined,
): boolean {
  const a = span.attributes;
  const content = settings.captureContent;
  for (const key in a) {
    const plan = planOf(key);
    switch (plan.kind) {
      case OVERWRITTEN:
        return false;
      case CONTENT:
        if (!content) continue;
        break;
      case BARE:
        if (mapped(op, key)) continue;
    }
    writeKeyValue(w, plan.key!, a[key]);
  }
  if (span.isLocalRoot) writeKeyValue(w, K_REQUEST_ID, span.requestId);
  if (op !== null) {
    writeKeyValue(w, K_OPERATION, op);
    const session = span.sessionId;
    if (session !== null) writeKeyValue(w, K_CONVERSATION, session);
  }
  switch (op) {
    case "invoke_workflow":
      writeKeyValue(w, K_WORKFLOW, DEFAULT_WORKFLOW);
      break;
    case "invoke_agent":
      writeKeyValue(w, K_AGENT, String(a.handler ?? ""));
      break;
    case "execute_tool":
      writeKeyValue(w, K_TOOL_NAME, String(a.tool ?? ""));
      writeKeyValue(w, K_TOOL_TYPE, mcpServer === undefined ? "function" : "extension");
      if (mcpServer !== undefined) writeKeyValue(w, K_SERVER, mcpServer);
      break;
    default:
      if (span.name === "mcp.call" && typeof a.server === "string") {
        writeKeyValue(w, K_SERVER, a.server);
      }
  }
  if (settings.includeUserId) {
    const user = span.userId;
    if (user !== null) writeKeyValue(w, K_USER, user);
  }
  const own = span.usage;
  if (spent(own)) {
    writeKeyValue(w, K_INPUT, own.promptTokens);
    writeKeyValue(w, K_OUTPUT, own.completionTokens);
    if (own.cachedInputTokens > 0) writeKeyValue(w, K_CACHE_READ, own.cachedInputTokens);
    if (own.reasoningTokens > 0) writeKeyValue(w, K_REASONING, own.reasoningTokens);
    writeKeyValue(w, K_COST, own.costUsd);
  }
  if (op === "invoke_workflow" || op === "invoke_agent") {
    const total = span.totalUsage;
    if (spent(total)) {
      writeKeyValue(w, K_TOTAL_INPUT, total.promptTokens);
      writeKeyValue(w, K_TOTAL_OUTPUT, total.completionTokens);
      writeKeyValue(w, K_TOTAL_COST, total.costUsd);
    }
  }
  if (span.status === "error") {
    writeKeyValue(w, K_ERROR_TYPE, typeof a.status === "string" ? a.status : "_OTHER");
  }
  return true;
}

/** Each GenAI span name seen (`invoke_agent my_agent`, ...), encoded once, by operation and suffix. */
const NAME_BYTES = new Map<GenAIOperation, Map<string, Uint8Array>>();

function nameBytes(op: GenAIOperation, suffix: string): Uint8Array {
  let names = NAME_BYTES.get(op);
  if (names === undefined) NAME_BYTES.set(op, (names = new Map()));
  let bytes = names.get(suffix);
  if (bytes === undefined) {
    const w = new ProtoWriter(64);
    w.string(`${op} ${suffix}`);
    bytes = w.take();
    if (names.size < 1024) names.set(suffix, bytes);
  }
  return bytes;
}

/** `KeyValue.key` of `key`: tag, length and UTF-8. */
function encodeKey(key: string): Uint8Array {
  const w = new ProtoWriter(64);
  w.byte(0x0a);
  w.string(key);
  return w.take();
}

const K_REQUEST_ID = encodeKey("nerva.request_id");
const K_OPERATION = encodeKey("gen_ai.operation.name");
const K_CONVERSATION = encodeKey("gen_ai.conversation.id");
const K_WORKFLOW = encodeKey("gen_ai.workflow.name");
const K_AGENT = encodeKey("gen_ai.agent.name");
const K_TOOL_NAME = encodeKey("gen_ai.tool.name");
const K_TOOL_TYPE = encodeKey("gen_ai.tool.type");
const K_SERVER = encodeKey("server.address");
const K_USER = encodeKey("enduser.id");
const K_INPUT = encodeKey("gen_ai.usage.input_tokens");
const K_OUTPUT = encodeKey("gen_ai.usage.output_tokens");
const K_CACHE_READ = encodeKey("gen_ai.usage.cache_read.input_tokens");
const K_REASONING = encodeKey("gen_ai.usage.reasoning.output_tokens");
const K_COST = encodeKey("nerva.usage.cost_usd");
const K_TOTAL_INPUT = encodeKey("nerva.usage.total.input_tokens");
const K_TOTAL_OUTPUT = encodeKey("nerva.usage.total.output_tokens");
const K_TOTAL_COST = encodeKey("nerva.usage.total.cost_usd");
const K_ERROR_TYPE = encodeKey("error.type");

/** How a span's own attribute is exported, by its key: see {@link planOf}. */
interface KeyPlan {
  readonly kind: typeof PASS | typeof CONTENT | typeof BARE | typeof OVERWRITTEN;
  /** The exported `KeyValue.key` (tag, length, UTF-8); `null` when OVERWRITTEN. */
  readonly key: Uint8Array | null;
}
/** A namespaced key, exported as it is. */
const PASS = 0;
/** A namespaced key that carries content: exported only with `captureContent`. */
const CONTENT = 1;
/** One of Nerva's bare keys: exported under `nerva.`, unless the operation's mapping replaces it. */
const BARE = 2;
/** A key the mapping writes too: the span is written from the mapping's object instead. */
const OVERWRITTEN = 3;

const PLANS = new Map<string, KeyPlan>();

/** The plan of each attribute key seen (one lookup per attribute), made once. */
function planOf(key: string): KeyPlan {
  let plan = PLANS.get(key);
  if (plan === undefined) {
    plan = makePlan(key);
    if (PLANS.size < 1024) PLANS.set(key, plan);
  }
  return plan;
}

function makePlan(key: string): KeyPlan {
  if (key.includes(".")) {
    if (MAPPING_KEYS.has(key) || key.startsWith("nerva.")) return { kind: OVERWRITTEN, key: null };
    return { kind: CONTENT_KEYS.has(key) ? CONTENT : PASS, key: encodeKey(key) };
  }
  if (key === "request_id") return { kind: OVERWRITTEN, key: null };
  return { kind: BARE, key: encodeKey(nervaKey(key)) };
}

/**
 * One `Span.attributes` entry, its key already encoded. Short ASCII strings, small whole numbers
 * and booleans (nearly every attribute) take one bounds check and one-byte lengths written in
 * place; anything else goes through the nested-message writer.
 */
function writeKeyValue(w: ProtoWriter, key: Uint8Array, value: unknown): void {
  const kl = key.length;
  switch (typeof value) {
    case "string": {
      const n = value.length;
      if (kl + n + 4 >= 0x80) break;
      w.reserve(kl + 3 * n + 6);
      const buf = w.buf;
      let p = w.pos;
      buf[p++] = 0x4a;
      buf[p++] = kl + n + 4;
      p = copyAt(buf, p, key);
      buf[p++] = 0x12; // value: AnyValue { string_value }
      buf[p++] = n + 2;
      buf[p++] = 0x0a;
      buf[p++] = n;
      const end = asciiAt(buf, p, value);
      if (end < 0) break; // not ASCII: nothing was counted, written below
      w.pos = end;
      return;
    }
    case "number": {
      if (kl + 8 >= 0x80 || !(value >= 0 && value <= 0xffffffff && Number.isInteger(value))) break;
      w.reserve(kl + 10);
      const buf = w.buf;
      let p = w.pos;
      buf[p] = 0x4a;
      const kvAt = p + 1;
      p = copyAt(buf, p + 2, key);
      buf[p] = 0x12; // value: AnyValue { int_value }
      const valueAt = p + 1;
      buf[p + 2] = 0x18;
      const end = varint32(buf, p + 3, value);
      buf[valueAt] = end - valueAt - 1;
      buf[kvAt] = end - kvAt - 1;
      w.pos = end;
      return;
    }
    case "boolean": {
      if (kl + 4 >= 0x80) break;
      w.reserve(kl + 6);
      const buf = w.buf;
      let p = w.pos;
      buf[p++] = 0x4a;
      buf[p++] = kl + 4;
      p = copyAt(buf, p, key);
      buf[p++] = 0x12; // value: AnyValue { bool_value }
      buf[p++] = 2;
      buf[p++] = 0x10;
      buf[p++] = value ? 1 : 0;
      w.pos = p;
      return;
    }
  }
  w.byte(0x4a);
  const kv = w.begin();
  w.raw(key);
  w.byte(0x12);
  const v = w.begin();
  writeValue(w, value);
  w.end(v);
  w.end(kv);
}

/** Each attribute as a `KeyValue` under the one-byte tag `tag`. */
function writeAttributes(w: ProtoWriter, attributes: Readonly<Attributes>, tag: number): void {
  for (const key in attributes) {
    w.byte(tag);
    const kv = w.begin();
    w.byte(0x0a);
    w.string(key);
    w.byte(0x12);
    const v = w.begin();
    writeValue(w, attributes[key]);
    w.end(v);
    w.end(kv);
  }
}

const MIN_INT64 = -(2 ** 63);
const MAX_INT64 = 2 ** 63;

/** An `AnyValue`: strings, booleans, numbers (int64 when whole) and arrays of them. */
function writeValue(w: ProtoWriter, value: unknown): void {
  switch (typeof value) {
    case "string":
      w.byte(0x0a);
      w.string(value);
      return;
    case "boolean":
      w.byte(0x10);
      w.byte(value ? 1 : 0);
      return;
    case "number":
      if (Number.isInteger(value) && value >= MIN_INT64 && value < MAX_INT64) {
        w.byte(0x18);
        w.int64(value);
      } else {
        w.byte(0x21);
        w.double(value);
      }
      return;
    default:
      if (Array.isArray(value)) {
        w.byte(0x2a);
        const a = w.begin();
        for (const item of value) {
          w.byte(0x0a);
          const i = w.begin();
          writeValue(w, item);
          w.end(i);
        }
        w.end(a);
      }
    // Nothing else is an attribute value (an empty AnyValue, as OpenTelemetry's serializer).
  }
}

/** When the first of `items` ended (epoch ms), read without converting Nerva's spans. */
function oldestEndMs(items: readonly ReadableSpan[]): number {
  let oldest = Infinity;
  for (const item of items as readonly unknown[]) {
    const span = isSpan(item) ? item : item instanceof NervaReadableSpan ? item.source : null;
    const end =
      span !== null
        ? (span.endMs ?? span.startMs)
        : hrTimeToMilliseconds((item as ReadableSpan).endTime);
    if (end < oldest) oldest = end;
  }
  return Number.isFinite(oldest) ? oldest : Date.now();
}
