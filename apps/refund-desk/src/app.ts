// The refund desk over HTTP with @nerva/express: trigger, SSE events (Last-Event-ID = seq), input.
import express, { type Express } from "express";
import {
  ErrorCode,
  NervaError,
  clientExecution,
  clientGraphEvent,
  type GraphRuntime,
} from "@nerva/core";
import { lastEventSeq } from "@nerva/core/http";
import { nervaErrorHandler, nervaMiddleware, sendSSE } from "@nerva/express";

/** The routes of an `api` entry point. Auth is the app's: put yours before nervaMiddleware. */
export function refundDeskApp(runtime: GraphRuntime): Express {
  const app = express();
  app.use(express.json());
  // Executions run as the agent named after the graph: anonymous callers may use only it.
  app.use(
    nervaMiddleware({
      anonymousPermissions: { allowedAgents: [runtime.graph.name, "intake_agent", "refund_agent"] },
    }),
  );
  app.post("/refunds", async (req, res) => {
    res
      .status(202)
      .json({ executionId: await runtime.trigger("default", req.body ?? {}, req.nervaCtx) });
  });
  app.get("/refunds/:id", async (req, res) => {
    const execution = await runtime.getExecution(req.params.id);
    if (execution === null)
      res.status(404).json({ error: { code: "NOT_FOUND", message: "No such refund." } });
    else res.json({ ...clientExecution(execution), sessionState: null });
  });
  app.post("/refunds/:id/input", async (req, res) => {
    const body = (req.body ?? {}) as { nodeId?: string; value?: unknown };
    const execution = await runtime.injectInput(req.params.id, String(body.nodeId), body.value);
    res.json({ ...clientExecution(execution), sessionState: null });
  });
  app.get("/refunds/:id/events", async (req, res) => {
    const afterSeq = lastEventSeq(req); // a Last-Event-ID that is not a seq: 400
    // Checked before the stream starts: an unknown id is still an ordinary 404.
    if ((await runtime.getExecution(req.params.id)) === null)
      throw new NervaError(ErrorCode.NOT_FOUND, "No such refund.");
    // Each event's seq is its id; clients see events without operator data: clientGraphEvent.
    await sendSSE(res, runtime.events(req.params.id, { afterSeq }), null, {
      message: (e) => ({ id: e.seq, event: e.type, data: clientGraphEvent(e) }),
    });
  });
  app.use(nervaErrorHandler());
  return app;
}
