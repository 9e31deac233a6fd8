import { existsSync } from "node:fs";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { defaultPageDir } from "@nerva/chat-web/server";
import {
  createAuth,
  createExampleService,
  oneSink,
  otelFromEnv,
  printBanner,
  stopOnSignals,
  traceUIFromEnv,
  TRAVELLER_ROLE,
} from "@nerva/example-kit";
import { CHAT_PAGE_PATH, createApp } from "./app.js";

// With REDIS_URL every piece of state is in Redis and this process also runs a worker on the runs
// queue, so any number of replicas may run behind a load balancer (give them one JWT_SECRET).
// Without: embedded defaults (in-process agents and stores). A scripted model unless
// OPENAI_API_KEY or ANTHROPIC_API_KEY is set. PORT=0 picks a free port.
const port = Number(process.env.PORT ?? 3000);
const host = process.env.HOST ?? "127.0.0.1";
const service = await createExampleService();
await service.start();
const traceUI = traceUIFromEnv(); // NERVA_TRACE_UI=1: the trace viewer at /_nerva/traces
const otel = otelFromEnv("nerva-express-example"); // OTEL_EXPORTER_OTLP_ENDPOINT set: export traces
const auth = createAuth(process.env.JWT_SECRET);
const traceSink = oneSink(traceUI?.traceSink, otel?.traceSink);
// The chat page (apps/chat-web), when `pnpm build` built it.
const pageBuilt = existsSync(join(defaultPageDir(), "index.html"));
const app = createApp({ ...service, auth, traceSink, chatPage: pageBuilt ? {} : undefined });
if (traceUI !== null) app.use(traceUI.viewer);

const server = app.listen(port, host, () => {
  const url = `http://${host}:${(server.address() as AddressInfo).port}`;
  printBanner("Nerva Express example", url, service.model, service.backend.kind);
  if (traceUI !== null) console.log(`  trace viewer: ${url}${traceUI.viewer.basePath}`);
  if (!pageBuilt) {
    console.log("  chat page: not built (run `pnpm build`)");
    return;
  }
  // A dev token for alice, as POST /token mints one (valid one hour); any user's works.
  void auth.mint("alice", [TRAVELLER_ROLE]).then(({ token }) => {
    console.log(`  chat page: ${url}${CHAT_PAGE_PATH}/?token=${token}`);
    console.log(`    (as alice; for another user: ${url}${CHAT_PAGE_PATH}/?token=$TOKEN)`);
  });
});

stopOnSignals(
  () => {
    server.close();
    server.closeAllConnections();
  },
  () => service.close(),
  () => otel?.shutdown(), // the last spans, flushed
);
