// Runs the refund desk: the graph runtime on SQLite (RUNS_DB, default refund-desk.db) and its HTTP
// routes on PORT (default 3000). Try:
//   curl -XPOST localhost:3000/refunds -H 'content-type: application/json' -d '{"orderId":"42"}'
//   curl -N localhost:3000/refunds/<id>/events
//   curl -XPOST localhost:3000/refunds/<id>/input -H 'content-type: application/json' -d '{"value":"approved"}'
import { AgentRunner } from "@nerva/core/graph";
import { refundDeskApp } from "./app.js";
import * as desk from "./refund-desk.js";

const runner = await AgentRunner.load(desk);
await runner.start();
const server = refundDeskApp(runner.runtime).listen(Number(process.env.PORT ?? 3000), () => {
  console.log(`refund desk on http://localhost:${(server.address() as { port: number }).port}`);
});
const stop = (): void => {
  server.close();
  void runner.cleanup().then(() => process.exit(0));
};
process.once("SIGINT", stop);
process.once("SIGTERM", stop);
