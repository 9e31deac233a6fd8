import "reflect-metadata";
import { NestFactory } from "@nestjs/core";
import { ExpressAdapter } from "@nestjs/platform-express";
import { FastifyAdapter } from "@nestjs/platform-fastify";
import {
  createAuth,
  createExampleOrchestrator,
  oneSink,
  otelFromEnv,
  printBanner,
  stopOnSignals,
  traceUIFromEnv,
} from "@nerva/example-kit";
import { createAppModule } from "./app.module.js";

// Embedded defaults: in-process agents, a scripted model unless OPENAI_API_KEY or ANTHROPIC_API_KEY
// is set, in-memory memory, a local JWT secret. PORT=0 picks a free port; PLATFORM=fastify runs on
// Nest's Fastify adapter instead of Express.
const port = Number(process.env.PORT ?? 3000);
const host = process.env.HOST ?? "127.0.0.1";
const platform = process.env.PLATFORM === "fastify" ? "fastify" : "express";
const { orchestrator, close, model } = await createExampleOrchestrator();
const traceUI = traceUIFromEnv(); // NERVA_TRACE_UI=1: the trace viewer at /_nerva/traces
const otel = otelFromEnv("nerva-nestjs-example"); // OTEL_EXPORTER_OTLP_ENDPOINT set: export traces
const auth = createAuth(process.env.JWT_SECRET);
const traceSink = oneSink(traceUI?.traceSink, otel?.traceSink);
const AppModule = createAppModule({ orchestrator, auth, traceSink });
const app = await NestFactory.create(
  AppModule,
  platform === "fastify" ? new FastifyAdapter() : new ExpressAdapter(),
  { logger: ["error", "warn"] },
);
if (traceUI !== null) app.use(traceUI.viewer);
await app.listen(port, host);
const url = (await app.getUrl()).replace("[::1]", "localhost");

printBanner(`Nerva NestJS example (${platform})`, url, model);
if (traceUI !== null) console.log(`  trace viewer: ${url}${traceUI.viewer.basePath}`);

stopOnSignals(
  () => app.close(),
  close,
  () => otel?.shutdown(), // the last spans, flushed
);
