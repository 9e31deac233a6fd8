import type { AddressInfo } from "node:net";
import {
  createAuth,
  createOrchestrator,
  otelFromEnv,
  printBanner,
  stopOnSignals,
} from "@nerva/example-kit";
import { createApp } from "./app.js";

// Embedded defaults: in-process agents, in-memory memory, a local JWT secret. PORT=0 picks a free port.
const port = Number(process.env.PORT ?? 3000);
const host = process.env.HOST ?? "127.0.0.1";
const { orchestrator, close } = createOrchestrator();
const otel = otelFromEnv("nerva-express-example"); // OTEL_EXPORTER_OTLP_ENDPOINT set: export traces
const auth = createAuth(process.env.JWT_SECRET);
const app = createApp({ orchestrator, auth, traceSink: otel?.traceSink });

const server = app.listen(port, host, () => {
  printBanner("Nerva Express example", `http://${host}:${(server.address() as AddressInfo).port}`);
});

stopOnSignals(
  () => {
    server.close();
    server.closeAllConnections();
  },
  close,
  () => otel?.shutdown(), // the last spans, flushed
);
