import { createHash } from "node:crypto";
import type { ServerResponse } from "node:http";
import { z } from "zod";
import type { ExecContext } from "../context/exec-context.js";
import { ErrorCode, NervaError, parseOrThrow } from "../errors.js";
import { GraphHost } from "../graph/host/graph-host.js";
import type { SSEOutcome } from "../http/sse-event-source.js";
import { RunQueue } from "../runs/run-queue.js";
import { RunStatus, type RunRecord } from "../runs/types.js";
import { parseRunAgentInput, turnOf, type AgUiRunInput } from "./input.js";
import { writeAgUiStream, type AgUiStreamOptions } from "./stream.js";

/** The input arg naming the AG-UI thread an agent's run answers. */
const THREAD_ARG = "threadId";

const Heartbeat = z.union([z.number().positive().finite(), z.literal(false)]).optional();
const AgUiRouteOptionsSchema = z.union([
  z
    .object({
      queue: z.custom<RunQueue>((v) => v instanceof RunQueue, "must be a RunQueue"),
      handler: z.string().min(1).max(200),
      history: z.enum(["client", "memory"]).default("client"),
      heartbeatSeconds: Heartbeat,
    })
    .strict(),
  z
    .object({
      queue: z.custom<RunQueue>((v) => v instanceof RunQueue, "must be a RunQueue"),
      graph: z.custom<GraphHost>((v) => v instanceof GraphHost, "must be a GraphHost"),
      entryPoint: z.string().min(1).max(200).default("default"),
      heartbeatSeconds: Heartbeat,
    })
    .strict(),
]);

/**
 * Options of {@link createAgUiRoute}: an agent (`handler`, run on `queue` by a Runner) or a
 * graph (`graph`, a started GraphHost, with the `queue` it was given).
 *
 * @example
 * const options: AgUiRouteOptions = { queue, handler: "chat_agent" };
 */
export type AgUiRouteOptions = z.input<typeof AgUiRouteOptionsSchema>;

/**
 * The AG-UI endpoint, framework-agnostic (see {@link createAgUiRoute}). `run` throws a
 * `NervaError` (map it with `toHttpError`) before it writes anything.
 *
 * @example
 * app.post("/ag-ui", (req, res, next) => agUi.run({ body: req.body, ctx: req.nervaCtx, res }).catch(next));
 */
export interface AgUiRoute {
  /** `POST /ag-ui`: one AG-UI run, its events streamed to `res`. */
  run(request: {
    body: unknown;
    ctx: ExecContext;
    res: ServerResponse;
    /** Called once the checks passed, right before `res` is written (a framework hands it over). */
    beforeWrite?: () => void;
  }): Promise<SSEOutcome>;
}

/**
 * The server side of an AG-UI client (`HttpAgent` of @ag-ui/client) over durable runs. The body
 * is a `RunAgentInput` (checked with @ag-ui/core's schema). A new run: an agent answers the last
 * user message (earlier turns in `input.history` with `history: "client"`, none with `"memory"`),
 * or a graph starts from `input.state`; the client's `tools` are not executed by Nerva. Its
 * events stream as AG-UI events (`writeAgUiStream`) until the run ends or pauses: a pause ends the
 * AG-UI run with an `interrupt` outcome, and the next RunAgentInput's `resume` entry answers it
 * (`status: "resolved"` → `queue.resume` with its `payload`; `"cancelled"` → `queue.cancel`),
 * streaming the rest of the same Nerva run. Only the run's user finds it: a request without a
 * user is refused (UNAUTHENTICATED), another user's interrupt is not found (NOT_FOUND). A retried
 * POST of the same `threadId` and `runId` streams the run it started instead of a second one.
 *
 * @example
 * const agUi = createAgUiRoute({ queue, handler: "chat_agent" });
 * app.post("/ag-ui", (req, res, next) => agUi.run({ body: req.body, ctx: req.nervaCtx, res }).catch(next));
 */
export function createAgUiRoute(options: AgUiRouteOptions): AgUiRoute {
  const o = parseOrThrow(
    AgUiRouteOptionsSchema,
    options,
    ErrorCode.INVALID_OPTIONS,
    "options",
    "Pass { queue, handler: the agent that answers, history? } or { queue, graph: a GraphHost on that queue, entryPoint? }.",
  );
  const queue = o.queue;
  const host = "graph" in o ? o.graph : null;

  const stream = async (
    res: ServerResponse,
    input: AgUiRunInput,
    runId: string,
    afterSeq: number,
    known: Record<string, unknown> | null,
    beforeWrite: (() => void) | undefined,
  ): Promise<SSEOutcome> => {
    const options: AgUiStreamOptions = {
      threadId: input.threadId,
      runId: input.runId,
      nervaRunId: runId,
      afterSeq,
      ...(o.heartbeatSeconds === undefined ? {} : { heartbeatSeconds: o.heartbeatSeconds }),
    };
    if (host === null) {
      beforeWrite?.();
      return writeAgUiStream(res, queue.events(runId), options);
    }
    const initial = known ?? (await host.get(runId))?.state ?? {};
    const end = async (): Promise<Record<string, unknown> | null> =>
      (await host.get(runId))?.state ?? null;
    beforeWrite?.();
    return writeAgUiStream(res, host.events(runId), { ...options, state: { initial, end } });
  };

  return {
    async run({ body, ctx, res, beforeWrite }) {
      const userId = ownerOf(ctx);
      const input = await parseRunAgentInput(body);
      if (input.resume !== undefined && input.resume.length > 0) {
        const { run, afterSeq, state } = await answer(queue, host, input, ctx, userId);
        return stream(res, input, run.id, afterSeq, state, beforeWrite);
      }
      // A retried POST of the same AG-UI run streams the run it started.
      const idempotencyKey = `ag-ui:${createHash("sha256")
        .update(JSON.stringify([userId, input.threadId, input.runId]))
        .digest("base64url")}`;
      let runId: string;
      if (host === null) {
        const turn = turnOf(input);
        const history = "history" in o && o.history === "client" ? turn.history : [];
        const run = await queue.enqueue({
          handler: (o as { handler: string }).handler,
          input: { message: turn.text, args: { [THREAD_ARG]: input.threadId }, history },
          ctx,
          idempotencyKey,
        });
        runId = run.id;
      } else {
        const state = input.state;
        const start =
          typeof state === "object" && state !== null && !Array.isArray(state)
            ? (state as Record<string, unknown>)
            : {};
        runId = await host.trigger((o as { entryPoint: string }).entryPoint, start, ctx, {
          idempotencyKey,
        });
      }
      return stream(res, input, runId, 0, null, beforeWrite);
    },
  };
}

/** The user whose runs these are: the only one who may answer their interrupts. */
function ownerOf(ctx: ExecContext): string {
  if (ctx.userId !== null) return ctx.userId;
  throw new NervaError(
    ErrorCode.UNAUTHENTICATED,
    "An AG-UI run needs a signed-in user: its interrupts are answered by that user only. Authenticate the request before the AG-UI route.",
  );
}

/**
 * Answers the interrupt the input's one resume entry names: checks it is the user's run, paused
 * at that key, then resumes (or cancels) it. Returns the run, the seq its pause was written at
 * and, for a graph, the state it paused with (read before the answer: a resumed run's record no
 * longer carries it).
 */
async function answer(
  queue: RunQueue,
  host: GraphHost | null,
  input: AgUiRunInput,
  ctx: ExecContext,
  userId: string,
): Promise<{ run: RunRecord; afterSeq: number; state: Record<string, unknown> | null }> {
  const entries = input.resume ?? [];
  const entry = entries[0];
  if (entries.length !== 1 || entry === undefined) {
    throw new NervaError(
      ErrorCode.INVALID_INPUT,
      "Invalid body.resume: a Nerva run waits for one answer at a time; send one resume entry, for the interrupt the last run ended with.",
      { issues: [{ path: "body.resume", message: "must hold exactly one entry" }] },
    );
  }
  const cut = entry.interruptId.indexOf(":");
  const runId = cut > 0 ? entry.interruptId.slice(0, cut) : "";
  const key = cut > 0 ? entry.interruptId.slice(cut + 1) : "";
  const run = runId === "" ? null : await queue.get(runId);
  if (run === null || run.userId !== userId) {
    throw new NervaError(
      ErrorCode.NOT_FOUND,
      `Interrupt ${entry.interruptId} was not found. Answer an interrupt your own last run ended with.`,
      { details: { interruptId: entry.interruptId } },
    );
  }
  if (run.status !== RunStatus.PAUSED || run.pause?.key !== key) {
    throw new NervaError(
      ErrorCode.INVALID_STATE,
      `Interrupt ${entry.interruptId} is not waiting for an answer (the run is ${run.status}). Start a new run instead.`,
      { details: { interruptId: entry.interruptId, status: run.status } },
    );
  }
  // Nothing is written while a run waits: its last event is the pause.
  const afterSeq = run.lastSeq;
  const state = host === null ? null : ((await host.get(run.id))?.state ?? null);
  if (entry.status === "cancelled") {
    await queue.cancel(run.id, { reason: "the interrupt was cancelled by the user" });
  } else if (host !== null) {
    await host.resume(run.id, entry.payload ?? null, { ctx });
  } else {
    await queue.resume(run.id, entry.payload ?? null, { key, ctx });
  }
  return { run, afterSeq, state };
}
