import "reflect-metadata";
import { NestFactory } from "@nestjs/core";
import { ExpressAdapter } from "@nestjs/platform-express";
import { FastifyAdapter } from "@nestjs/platform-fastify";
import {
  createAuth,
  createExampleService,
  oneSink,
  otelFromEnv,
  printBanner,
  stopOnSignals,
  traceUIFromEnv,
} from "@nerva/example-kit";
import { createAppModule } from "./app.module.js";

// With REDIS_URL every piece of state is in Redis and this process also runs a worker on the runs
// queue, so any number of replicas may run behind a load balancer (give them one JWT_SECRET).
// Without: embedded defaults (in-process agents and stores). A scripted model unless
// OPENAI_API_KEY or ANTHROPIC_API_KEY is set. PORT=0 picks a free port; PLATFORM=fastify runs on
// Nest's Fastify adapter instead of Express.
const port = Number(process.env.PORT ?? 3000);
const host = process.env.HOST ?? "127.0.0.1";
const platform = process.env.PLATFORM === "fastify" ? "fastify" : "express";
const service = await createExampleService();
await service.start();
const traceUI = traceUIFromEnv(); // NERVA_TRACE_UI=1: the trace viewer at /_nerva/traces
const otel = otelFromEnv("nerva-nestjs-example"); // OTEL_EXPORTER_OTLP_ENDPOINT set: export traces
const auth = createAuth(process.env.JWT_SECRET);
const traceSink = oneSink(traceUI?.traceSink, otel?.traceSink);
const AppModule = createAppModule({ ...service, auth, traceSink });
const app = await NestFactory.create(
  AppModule,
  platform === "fastify" ? new FastifyAdapter() : new ExpressAdapter(),
  { logger: ["error", "warn"] },
);
if (traceUI !== null) app.use(traceUI.viewer);
await app.listen(port, host);
const url = (await app.getUrl()).replace("[::1]", "localhost");

printBanner(`Nerva NestJS example (${platform})`, url, service.model, service.backend.kind);
if (traceUI !== null) console.log(`  trace viewer: ${url}${traceUI.viewer.basePath}`);

stopOnSignals(
  () => app.close(),
  () => service.close(),
  () => otel?.shutdown(), // the last spans, flushed
);
