// The refund desk over HTTP with @nerva/express: trigger, SSE events (Last-Event-ID = seq), input.
import express, { type Express } from "express";
import { clientRun, clientRunEvent, type RunEvent, type GraphHost } from "@nerva/core";
import { nervaErrorHandler, nervaMiddleware } from "@nerva/express";

/** The routes of an `api` entry point. Auth is the app's: put yours before nervaMiddleware. */
export function refundDeskApp(runtime: GraphHost): Express {
  const app = express();
  app.use(express.json());
  // Runs of the graph run as the agent named after it: anonymous callers may use only it.
  app.use(
    nervaMiddleware({
      anonymousPermissions: { allowedAgents: [runtime.graph.name, "intake_agent", "refund_agent"] },
    }),
  );
  app.post("/refunds", async (req, res) => {
    res.status(202).json({ runId: await runtime.trigger("default", req.body ?? {}, req.nervaCtx) });
  });
  app.get("/refunds/:id", async (req, res) => {
    const execution = await runtime.get(req.params.id);
    if (execution === null)
      res.status(404).json({ error: { code: "NOT_FOUND", message: "No such refund." } });
    else res.json({ ...clientRun(execution), sessionState: null });
  });
  app.post("/refunds/:id/input", async (req, res) => {
    const body = (req.body ?? {}) as { value?: unknown };
    const execution = await runtime.resume(req.params.id, body.value);
    res.json({ ...clientRun(execution), sessionState: null });
  });
  app.get("/refunds/:id/events", async (req, res) => {
    const stop = new AbortController();
    req.on("close", () => stop.abort());
    const afterSeq = Number(req.get("last-event-id") ?? 0) || 0;
    const events = runtime.events(req.params.id, { afterSeq, signal: stop.signal });
    const first = await events.next(); // NOT_FOUND surfaces before the stream starts
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-store" });
    // Clients see events without operator data (error texts, worker ids): clientRunEvent.
    const send = (e: RunEvent) =>
      res.write(`id: ${e.seq}\nevent: ${e.type}\ndata: ${JSON.stringify(clientRunEvent(e))}\n\n`);
    if (first.done !== true) {
      send(first.value);
      for await (const e of events) if (!send(e)) await new Promise((r) => res.once("drain", r));
    }
    res.end();
  });
  app.use(nervaErrorHandler());
  return app;
}
