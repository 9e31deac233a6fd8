// The refund desk over HTTP with @nerva/express: trigger, SSE events (Last-Event-ID = seq), input.
import express, { type Express } from "express";
import { ErrorCode, NervaError, type GraphHost } from "@nerva/core";
import { clientRun, clientRunEvent } from "@nerva/core/http";
import { lastEventSeq } from "@nerva/core/http";
import { nervaErrorHandler, nervaMiddleware, sendSSE } from "@nerva/express";

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
    const afterSeq = lastEventSeq(req); // a Last-Event-ID that is not a seq: 400
    // Checked before the stream starts: an unknown id is still an ordinary 404.
    if ((await runtime.get(req.params.id)) === null)
      throw new NervaError(ErrorCode.NOT_FOUND, "No such refund.");
    // Each event's seq is its id; clients see events without operator data: clientRunEvent.
    await sendSSE(res, runtime.events(req.params.id, { afterSeq }), null, {
      message: (e) => ({ id: e.seq, event: e.type, data: clientRunEvent(e) }),
    });
  });
  app.use(nervaErrorHandler());
  return app;
}
