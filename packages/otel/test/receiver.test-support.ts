// A real OTLP/HTTP receiver for the tests: a node:http server on 127.0.0.1:0 that records every
// POST /v1/traces (headers and raw body) and answers with the status the test sets.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

export interface Received {
  readonly path: string;
  readonly contentType: string;
  readonly body: Buffer;
}

export interface Receiver {
  readonly url: string;
  readonly port: number;
  readonly received: Received[];
  /** The status of the next answers (200 by default). */
  status: number;
  close(): Promise<void>;
}

export async function startReceiver(port = 0): Promise<Receiver> {
  const received: Received[] = [];
  const receiver = {
    url: "",
    port: 0,
    received,
    status: 200,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      received.push({
        path: req.url ?? "",
        contentType: req.headers["content-type"] ?? "",
        body: Buffer.concat(chunks),
      });
      const json = (req.headers["content-type"] ?? "").includes("json");
      res.writeHead(receiver.status, {
        "content-type": json ? "application/json" : "application/x-protobuf",
      });
      res.end(json ? "{}" : "");
    });
  });
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
  receiver.port = (server.address() as AddressInfo).port;
  receiver.url = `http://127.0.0.1:${receiver.port}/v1/traces`;
  return receiver;
}

/** A port nothing listens on (a receiver's, closed again). */
export async function closedPort(): Promise<number> {
  const r = await startReceiver();
  await r.close();
  return r.port;
}

/** OTLP/JSON as the JS exporter writes it (hex ids, string-typed values). */
export interface JsonSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes: { key: string; value: Record<string, unknown> }[];
  events?: { name: string }[];
  status?: { code?: number; message?: string };
}

/** Every span of every JSON request received, with the resource and scope they came under. */
export function jsonSpans(
  received: readonly Received[],
): (JsonSpan & { scope: string; service: unknown })[] {
  const out: (JsonSpan & { scope: string; service: unknown })[] = [];
  for (const r of received) {
    const doc = JSON.parse(r.body.toString("utf8")) as {
      resourceSpans: {
        resource: { attributes: { key: string; value: { stringValue?: string } }[] };
        scopeSpans: { scope: { name: string }; spans: JsonSpan[] }[];
      }[];
    };
    for (const rs of doc.resourceSpans) {
      const service = rs.resource.attributes.find((a) => a.key === "service.name")?.value
        .stringValue;
      for (const ss of rs.scopeSpans) {
        for (const s of ss.spans) out.push({ ...s, scope: ss.scope.name, service });
      }
    }
  }
  return out;
}

/** The value of attribute `key` of a JSON span (its intValue as a number). */
export function attr(span: JsonSpan, key: string): unknown {
  const v = span.attributes.find((a) => a.key === key)?.value;
  if (v === undefined) return undefined;
  if ("intValue" in v) return Number(v.intValue);
  return Object.values(v)[0];
}
