// Runs the refund desk: the graph runtime on SQLite (RUNS_DB, default refund-desk.db) and its HTTP
// routes on PORT (default 3000). Try:
//   curl -XPOST localhost:3000/refunds -H 'content-type: application/json' -d '{"orderId":"42"}'
//   curl -N localhost:3000/refunds/<id>/events
//   curl -XPOST localhost:3000/refunds/<id>/input -H 'content-type: application/json' -d '{"value":"approved"}'
import { refundDeskApp } from "./app.js";
import { refundDeskHost } from "./host.js";
import { config } from "./refund-desk.js";

const { host, close } = refundDeskHost(config.store.sqlite);
await host.start();
const server = refundDeskApp(host).listen(Number(process.env.PORT ?? 3000), () => {
  console.log(`refund desk on http://localhost:${(server.address() as { port: number }).port}`);
});
const stop = (): void => {
  server.close();
  void close().then(() => process.exit(0));
};
process.once("SIGINT", stop);
process.once("SIGTERM", stop);
