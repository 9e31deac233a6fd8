import type { AddressInfo } from "node:net";
import {
  createAuth,
  createExampleOrchestrator,
  oneSink,
  otelFromEnv,
  printBanner,
  stopOnSignals,
  traceUIFromEnv,
} from "@nerva/example-kit";
import { createApp } from "./app.js";

// Embedded defaults: in-process agents, a scripted model unless OPENAI_API_KEY or ANTHROPIC_API_KEY
// is set, in-memory memory, a local JWT secret. PORT=0 picks a free port.
const port = Number(process.env.PORT ?? 3000);
const host = process.env.HOST ?? "127.0.0.1";
const { orchestrator, close, model } = await createExampleOrchestrator();
const traceUI = traceUIFromEnv(); // NERVA_TRACE_UI=1: the trace viewer at /_nerva/traces
const otel = otelFromEnv("nerva-express-example"); // OTEL_EXPORTER_OTLP_ENDPOINT set: export traces
const auth = createAuth(process.env.JWT_SECRET);
const traceSink = oneSink(traceUI?.traceSink, otel?.traceSink);
const app = createApp({ orchestrator, auth, traceSink });
if (traceUI !== null) app.use(traceUI.viewer);

const server = app.listen(port, host, () => {
  const url = `http://${host}:${(server.address() as AddressInfo).port}`;
  printBanner("Nerva Express example", url, model);
  if (traceUI !== null) console.log(`  trace viewer: ${url}${traceUI.viewer.basePath}`);
});

stopOnSignals(
  () => {
    server.close();
    server.closeAllConnections();
  },
  close,
  () => otel?.shutdown(), // the last spans, flushed
);
