// Decodes OTLP trace requests (protobuf) with protobufjs and the messages of
// opentelemetry-proto (trace/v1, common/v1, resource/v1, collector/trace/v1), written out here:
// an independent reading of the bytes, neither ours nor OpenTelemetry's serializer.
import protobuf from "protobufjs";

const PROTO = `
syntax = "proto3";
package otlp;
message AnyValue {
  oneof value {
    string string_value = 1; bool bool_value = 2; int64 int_value = 3; double double_value = 4;
    ArrayValue array_value = 5; KeyValueList kvlist_value = 6; bytes bytes_value = 7;
  }
}
message ArrayValue { repeated AnyValue values = 1; }
message KeyValueList { repeated KeyValue values = 1; }
message KeyValue { string key = 1; AnyValue value = 2; }
message InstrumentationScope {
  string name = 1; string version = 2; repeated KeyValue attributes = 3;
  uint32 dropped_attributes_count = 4;
}
message Resource { repeated KeyValue attributes = 1; uint32 dropped_attributes_count = 2; }
message ExportTraceServiceRequest { repeated ResourceSpans resource_spans = 1; }
message ResourceSpans {
  Resource resource = 1; repeated ScopeSpans scope_spans = 2; string schema_url = 3;
}
message ScopeSpans { InstrumentationScope scope = 1; repeated Span spans = 2; string schema_url = 3; }
message Span {
  bytes trace_id = 1; bytes span_id = 2; string trace_state = 3; bytes parent_span_id = 4;
  fixed32 flags = 16; string name = 5; int32 kind = 6;
  fixed64 start_time_unix_nano = 7; fixed64 end_time_unix_nano = 8;
  repeated KeyValue attributes = 9; uint32 dropped_attributes_count = 10;
  message Event {
    fixed64 time_unix_nano = 1; string name = 2; repeated KeyValue attributes = 3;
    uint32 dropped_attributes_count = 4;
  }
  repeated Event events = 11; uint32 dropped_events_count = 12;
  repeated bytes links = 13; uint32 dropped_links_count = 14;
  Status status = 15;
}
message Status { string message = 2; int32 code = 3; }
`;

const Request = protobuf.parse(PROTO).root.lookupType("otlp.ExportTraceServiceRequest");

export interface DecodedValue {
  stringValue?: string;
  boolValue?: boolean;
  intValue?: string;
  doubleValue?: number;
  arrayValue?: { values?: DecodedValue[] };
}
export interface DecodedKeyValue {
  key: string;
  value?: DecodedValue;
}
export interface DecodedSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  flags?: number;
  name: string;
  kind?: number;
  startTimeUnixNano: string;
  endTimeUnixNano: string;
  attributes?: DecodedKeyValue[];
  events?: { timeUnixNano: string; name: string; attributes?: DecodedKeyValue[] }[];
  status?: { message?: string; code?: number };
}
export interface DecodedRequest {
  resourceSpans?: {
    resource?: { attributes?: DecodedKeyValue[] };
    scopeSpans?: { scope?: { name: string; version?: string }; spans?: DecodedSpan[] }[];
  }[];
}

/**
 * The request as plain data: ids in hex, 64-bit numbers as decimal strings, and every field
 * at its default value (0, "", false, empty) left out, whether it was written or not (the
 * protobuf reading of both is the same).
 */
export function decodeTraceRequest(bytes: Uint8Array): DecodedRequest {
  const message = Request.decode(bytes);
  const object = Request.toObject(message, { longs: String, bytes: String, defaults: false });
  return withoutDefaults(hexIds(object)) as DecodedRequest;
}

/** Every span of a decoded request. */
export function decodedSpans(request: DecodedRequest): DecodedSpan[] {
  return (request.resourceSpans ?? []).flatMap((rs) =>
    (rs.scopeSpans ?? []).flatMap((ss) => ss.spans ?? []),
  );
}

/** The value of attribute `key`: a string, a boolean, a number (int64 as a number). */
export function attrOf(span: DecodedSpan, key: string): unknown {
  const v = span.attributes?.find((a) => a.key === key)?.value;
  if (v === undefined) return undefined;
  if (v.intValue !== undefined) return Number(v.intValue);
  return v.stringValue ?? v.boolValue ?? v.doubleValue ?? v.arrayValue;
}

function hexIds(value: unknown, key = ""): unknown {
  if (typeof value === "string" && /^(traceId|spanId|parentSpanId)$/.test(key)) {
    return Buffer.from(value, "base64").toString("hex");
  }
  if (Array.isArray(value)) return value.map((v) => hexIds(v));
  if (typeof value === "object" && value !== null) {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, hexIds(v, k)]));
  }
  return value;
}

function withoutDefaults(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutDefaults);
  if (typeof value !== "object" || value === null) return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    const w = withoutDefaults(v);
    const empty =
      w === 0 ||
      w === "" ||
      w === "0" ||
      w === false ||
      (Array.isArray(w) && w.length === 0) ||
      (typeof w === "object" && w !== null && !Array.isArray(w) && Object.keys(w).length === 0);
    // An AnyValue's members are a oneof: its zero (false, 0) is a value, not a default.
    if (!empty || /^(boolValue|intValue|doubleValue|stringValue)$/.test(k)) out[k] = w;
  }
  return out;
}
