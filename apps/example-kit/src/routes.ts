// The bodies of the example service's routes, whatever the framework: each takes the request's
// body (already checked by jsonBodyOf) or path parameter and its ExecContext, and answers a
// status and a JSON body, or throws a NervaError that the bridge's error handler answers.
import type { IncomingHttpHeaders } from "node:http";
import {
  ErrorCode,
  NervaError,
  type ExecContext,
  type Orchestrator,
  type RunEvent,
  type RunQueue,
} from "@nerva/core";
import type { DeclarativePolicyEngine } from "@nerva/core/policy";
import {
  clientRun,
  clientRunEvent,
  httpStatusOfResult,
  lastEventSeq,
  type SSEOptions,
} from "@nerva/core/http";
import type { DevAuth } from "./auth.js";
import { RUN_HANDLER, type ExampleProtocols } from "./protocols.js";
import { approvalDecisionOf, approvalIdOf, chatRequestOf, runIdOf } from "./requests.js";

/**
 * The routes every example app serves, as its `GET /` lists them.
 *
 * @example
 * app.get("/", (_req, res) => res.json({ name: "my-example", endpoints: EXAMPLE_ENDPOINTS }));
 */
export const EXAMPLE_ENDPOINTS: readonly string[] = Object.freeze([
  "POST /token",
  "POST /chat",
  "POST /chat/stream",
  "POST /chat/resume",
  "POST /approvals/:id",
  "POST /runs",
  "GET /runs/:id",
  "GET /runs/:id/events",
  "POST /runs/:id/cancel",
  "POST /api/chat",
  "GET /api/chat/:id/stream",
  "POST /api/chat/:id/stop",
  "POST /ag-ui",
  "POST|GET|DELETE /mcp",
]);

/**
 * What an example app's routes are built on: the orchestrator (for `/chat/stream`), the route
 * bodies, the protocol endpoints (`/api/chat`, `/ag-ui`, `/mcp`) and the dev JWT auth.
 *
 * @example
 * const app = createApp({ ...service, auth });
 */
export interface ExampleAppDeps {
  readonly orchestrator: Orchestrator;
  readonly routes: ExampleRoutes;
  readonly protocols: ExampleProtocols;
  readonly auth: DevAuth;
}

/**
 * A route's answer: the HTTP status and the JSON body.
 *
 * @example
 * const { status, body }: RouteAnswer = await routes.chat(jsonBodyOf(req), req.nervaCtx);
 */
export interface RouteAnswer {
  readonly status: number;
  readonly body: Record<string, unknown>;
}

/**
 * The routes of the example service (see {@link createExampleRoutes}).
 *
 * @example
 * app.post("/runs", async (req, res) => {
 *   const { status, body } = await routes.startRun(jsonBodyOf(req), req.nervaCtx);
 *   res.status(status).json(body);
 * });
 */
export interface ExampleRoutes {
  /** `POST /chat`: the answer, its token usage at `usage.totalTokens`, the request id. */
  chat(body: Record<string, unknown>, ctx: ExecContext): Promise<RouteAnswer>;
  /** `POST /approvals/:id`: `{ decision: "approve" | "deny", note? }` by an `approver`. */
  decide(id: unknown, body: Record<string, unknown>, ctx: ExecContext): Promise<RouteAnswer>;
  /** `POST /chat/resume`: `{ approvalId }`, by the requester: the approved message's answer, once. */
  resume(body: Record<string, unknown>, ctx: ExecContext): Promise<RouteAnswer>;
  /** `POST /runs`: `{ message }` handled as a durable run (202 with its id). */
  startRun(body: Record<string, unknown>, ctx: ExecContext): Promise<RouteAnswer>;
  /** `GET /runs/:id`: the run as a client may see it. */
  getRun(id: unknown, ctx: ExecContext): Promise<RouteAnswer>;
  /** `POST /runs/:id/cancel`. */
  cancelRun(id: unknown, ctx: ExecContext): Promise<RouteAnswer>;
  /**
   * `GET /runs/:id/events`: what to give the bridge's `sendSSE(res, source, null, options)`, from
   * the event after the request's `Last-Event-ID`.
   */
  runEvents(
    id: unknown,
    request: { readonly headers: IncomingHttpHeaders },
    ctx: ExecContext,
  ): Promise<{ source: AsyncIterable<RunEvent>; options: SSEOptions<RunEvent> }>;
}

/**
 * The route bodies of the example service over its orchestrator, policy and runs queue. A run
 * is its user's alone: anyone else gets the 404 of a run that does not exist.
 *
 * @example
 * const routes = createExampleRoutes({ orchestrator, policy, runs: backend.queue("runs") });
 */
export function createExampleRoutes(deps: {
  orchestrator: Orchestrator;
  policy: DeclarativePolicyEngine;
  runs: RunQueue;
}): ExampleRoutes {
  const { orchestrator, policy, runs } = deps;

  const answer = async (
    ctx: ExecContext,
    handle: () => ReturnType<Orchestrator["handle"]>,
  ): Promise<RouteAnswer> => {
    const response = await handle();
    const usage = ctx.tokenUsage;
    return {
      status: httpStatusOfResult(response),
      body: { ...response, usage: { ...usage }, requestId: ctx.requestId },
    };
  };

  const ownRun = async (id: unknown, ctx: ExecContext) => {
    const runId = runIdOf(id);
    const run = await runs.get(runId);
    // Someone else's run answers exactly like one that does not exist.
    if (run === null || run.queue !== runs.name || run.userId !== ctx.userId) {
      throw new NervaError(ErrorCode.NOT_FOUND, `Run "${runId}" does not exist.`, {
        details: { runId },
      });
    }
    return run;
  };

  return {
    chat: (body, ctx) => {
      const { message } = chatRequestOf(body);
      return answer(ctx, () => orchestrator.handle(message, ctx));
    },

    async decide(id, body, ctx) {
      const approvalId = runIdOf(id);
      const { decision, note } = approvalDecisionOf(body);
      // Refused with PERMISSION_DENIED (403) unless ctx has the role `approver` and is not the
      // requester; INVALID_STATE (409) once decided.
      await policy.approvals.resume(
        approvalId,
        { decision, ...(note === undefined ? {} : { note }) },
        { ctx },
      );
      return { status: 200, body: { approvalId, decision } };
    },

    async resume(body, ctx) {
      const { approvalId } = approvalIdOf(body);
      const approval = await policy.approval(approvalId, ctx);
      if (approval !== null && approval.userId === ctx.userId && approval.status === "used") {
        throw usedOnce(approvalId);
      }
      try {
        return await answer(ctx, () => orchestrator.handleApproved(approvalId, ctx));
      } catch (err) {
        // Another resume used the approval first: this one asked for a new approval instead.
        if (
          err instanceof NervaError &&
          err.code === ErrorCode.APPROVAL_PENDING &&
          err.details["approvalId"] !== approvalId
        ) {
          throw usedOnce(approvalId);
        }
        throw err;
      }
    },

    async startRun(body, ctx) {
      const { message } = chatRequestOf(body);
      const run = await runs.enqueue({
        handler: RUN_HANDLER,
        input: { message },
        ctx,
        timeoutSeconds: 300,
        // A policy refusal or a failure is the run's answer: it is not tried again.
        retry: { maxAttempts: 1 },
      });
      return {
        status: 202,
        body: { id: run.id, status: run.status, events: `/runs/${run.id}/events` },
      };
    },

    async getRun(id, ctx) {
      return { status: 200, body: { ...clientRun(await ownRun(id, ctx)) } };
    },

    async cancelRun(id, ctx) {
      const run = await ownRun(id, ctx);
      const cancelled = await runs.cancel(run.id, { reason: "cancelled by its user" });
      return { status: 200, body: { ...clientRun(cancelled) } };
    },

    async runEvents(id, request, ctx) {
      // A bad Last-Event-ID is a 400 before anything else.
      const afterSeq = lastEventSeq(request);
      const run = await ownRun(id, ctx);
      return {
        source: runs.events(run.id, { afterSeq }),
        options: { message: (e) => ({ id: e.seq, event: e.type, data: clientRunEvent(e) }) },
      };
    },
  };
}

function usedOnce(approvalId: string): NervaError {
  return new NervaError(
    ErrorCode.INVALID_STATE,
    `Approval "${approvalId}" was already used: its answer is given once. Send the message to /chat again to ask for a new approval.`,
    { details: { approvalId } },
  );
}
