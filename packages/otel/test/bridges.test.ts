// traceparent through the Express and Fastify bridges over real HTTP: from the header, and with
// `traceparentFrom: activeTraceparent` under the HTTP server span of the app's own tracing
// (opened around the request the way @opentelemetry/instrumentation-http does).
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { context, propagation, SpanKind, trace } from "@opentelemetry/api";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import express from "express";
import Fastify from "fastify";
import { afterAll, beforeEach, describe, expect, it, vi } from "vitest";
import type { TraceSink } from "@nerva/core/tracing";
import { nervaMiddleware } from "@nerva/express";
import { jsonBodyOf } from "@nerva/core/http";
import { nervaPlugin } from "@nerva/fastify";
import { activeTraceparent, createOtelSink } from "../src/index.js";
import { appTracer, registerAppTracing } from "./otel-app.test-support.js";
import { flightWorld, memoryExport, one } from "./world.test-support.js";

const { exporter, processor } = memoryExport();
const unregister = registerAppTracing(processor);
propagation.setGlobalPropagator(new W3CTraceContextPropagator());
afterAll(async () => {
  propagation.disable();
  await unregister();
});
beforeEach(() => exporter.reset());

const CLIENT_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736";
const CLIENT_SPAN = "00f067aa0ba902b7";
const clientHeader = (flags: "01" | "00", traceId = CLIENT_TRACE) =>
  `00-${traceId}-${CLIENT_SPAN}-${flags}`;

type Listener = (req: IncomingMessage, res: ServerResponse) => void;

/** The app's HTTP server span around each request, active while the framework handles it. */
function withServerSpan(listener: Listener): Listener {
  return (req, res) => {
    const parent = propagation.extract(context.active(), req.headers);
    const span = appTracer().startSpan(
      `${req.method} ${req.url}`,
      { kind: SpanKind.SERVER },
      parent,
    );
    res.on("close", () => span.end());
    context.with(trace.setSpan(parent, span), () => listener(req, res));
  };
}

const identity = () => ({
  userId: "u1",
  sessionId: "s1",
  allowedAgents: ["flight_agent", "calendar_agent"],
  allowedTools: ["search_flights", "calendar"],
});

interface App {
  readonly url: string;
  close(): Promise<void>;
}

async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

async function expressApp(sink: TraceSink, fromActive: boolean): Promise<App> {
  const world = flightWorld();
  const app = express();
  app.use(express.json());
  app.use(
    nervaMiddleware({
      traceSink: sink,
      resolve: identity,
      ...(fromActive ? { traceparentFrom: activeTraceparent } : {}),
    }),
  );
  app.post("/chat", async (req, res) => {
    const body = req.body as { message: string };
    res.json(await world.orchestrator.handle(body.message, req.nervaCtx));
  });
  const server = createServer(fromActive ? withServerSpan(app) : app);
  const url = await listen(server);
  return {
    url,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

async function fastifyApp(sink: TraceSink, fromActive: boolean): Promise<App> {
  const world = flightWorld();
  const app = Fastify({
    serverFactory: (handler) => createServer(fromActive ? withServerSpan(handler) : handler),
  });
  await app.register(nervaPlugin, {
    traceSink: sink,
    resolve: identity,
    ...(fromActive ? { traceparentFrom: activeTraceparent } : {}),
  });
  app.post("/chat", async (request) =>
    world.orchestrator.handle(jsonBodyOf(request).message as string, request.nervaCtx),
  );
  await app.listen({ port: 0, host: "127.0.0.1" });
  const { port } = app.server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, close: () => app.close() };
}

async function chat(app: App, traceparent: string): Promise<void> {
  const res = await fetch(`${app.url}/chat`, {
    method: "POST",
    headers: { "content-type": "application/json", traceparent },
    body: JSON.stringify({ message: "Book a flight" }),
  });
  expect(res.status).toBe(200);
  const body = (await res.json()) as { status: string };
  expect(body.status, JSON.stringify(body)).toBe("success");
}

describe.each([
  ["Express", expressApp],
  ["Fastify", fastifyApp],
])("%s bridge with an OTel sink", (_name, makeApp) => {
  it("joins the caller's trace from the traceparent header", async () => {
    const app = await makeApp(createOtelSink({ spanProcessors: [processor] }), false);
    try {
      await chat(app, clientHeader("01"));
      const spans = exporter.getFinishedSpans();
      expect(spans).toHaveLength(12);
      const root = one(spans, "invoke_workflow nerva");
      expect(root.spanContext().traceId).toBe(CLIENT_TRACE);
      expect(root.parentSpanContext).toMatchObject({ spanId: CLIENT_SPAN, isRemote: true });
      expect(new Set(spans.map((s) => s.spanContext().traceId))).toEqual(new Set([CLIENT_TRACE]));
      expect(root.attributes["nerva.usage.total.input_tokens"]).toBe(160);
    } finally {
      await app.close();
    }
  });

  it("with traceparentFrom: activeTraceparent, nests its root under the app's HTTP server span", async () => {
    const app = await makeApp(createOtelSink({ spanProcessors: [processor] }), true);
    try {
      await chat(app, clientHeader("01"));
      // The server span ends when the response closes, which may be after the client read it.
      const server = await vi.waitFor(() => one(exporter.getFinishedSpans(), "POST /chat"));
      const spans = exporter.getFinishedSpans();
      expect(server.kind).toBe(SpanKind.SERVER);
      expect(server.parentSpanContext?.spanId).toBe(CLIENT_SPAN);
      const root = one(spans, "invoke_workflow nerva");
      expect(root.spanContext().traceId).toBe(CLIENT_TRACE);
      expect(root.parentSpanContext?.spanId).toBe(server.spanContext().spanId);
      expect(spans).toHaveLength(13);
    } finally {
      await app.close();
    }
  });

  it("exports nothing when the app's sampler (here: the caller's flag) drops the request", async () => {
    const app = await makeApp(createOtelSink({ spanProcessors: [processor] }), true);
    try {
      await chat(app, clientHeader("00"));
      // A sampled request after it: once its server span is in, the first one's would be too.
      const other = "11111111111111111111111111111111";
      await chat(app, clientHeader("01", other));
      await vi.waitFor(() => one(exporter.getFinishedSpans(), "POST /chat"));
      const traces = new Set(exporter.getFinishedSpans().map((s) => s.spanContext().traceId));
      expect(traces).toEqual(new Set([other]));
    } finally {
      await app.close();
    }
  });
});

describe("activeTraceparent as traceparentFrom", () => {
  it("with activeTraceparent and no active span, still joins the caller by its header", async () => {
    // An app whose tracing does not cover this server: activeTraceparent falls back to the header.
    const world = flightWorld();
    const sink = createOtelSink({ spanProcessors: [processor] });
    const app = express();
    app.use(express.json());
    app.use(
      nervaMiddleware({ traceSink: sink, resolve: identity, traceparentFrom: activeTraceparent }),
    );
    app.post("/chat", async (req, res) => {
      res.json(
        await world.orchestrator.handle((req.body as { message: string }).message, req.nervaCtx),
      );
    });
    const server = createServer(app);
    const url = await listen(server);
    try {
      await chat({ url, close: async () => undefined }, clientHeader("01"));
      const root = one(exporter.getFinishedSpans(), "invoke_workflow nerva");
      expect(root.parentSpanContext?.spanId).toBe(CLIENT_SPAN);
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
