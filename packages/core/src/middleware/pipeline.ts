import type { ExecContext } from "../context/exec-context.js";
import { ErrorCode, NervaError } from "../errors.js";
import { AgentInputSchema, AgentResultSchema } from "../types/agent.js";
import { AGENT_STATUSES } from "../types/status.js";
import {
  MiddlewareStage,
  type InvocationRequest,
  type Middleware,
  type OrchestratorResponse,
  type PipelineStage,
} from "./types.js";
import type { RouteResult } from "../router/types.js";
import type { AgentResult } from "../types/agent.js";

/** The payload type of each payload stage. */
export interface StagePayloads {
  beforeRoute: string;
  afterRoute: RouteResult;
  beforeInvoke: InvocationRequest;
  afterInvoke: AgentResult;
  beforeRespond: OrchestratorResponse;
}
type PayloadStage = keyof StagePayloads;

const PAYLOAD_STAGES: readonly PayloadStage[] = [
  MiddlewareStage.BEFORE_ROUTE,
  MiddlewareStage.AFTER_ROUTE,
  MiddlewareStage.BEFORE_INVOKE,
  MiddlewareStage.AFTER_INVOKE,
  MiddlewareStage.BEFORE_RESPOND,
];
const ALL_STAGES: readonly string[] = [...PAYLOAD_STAGES, MiddlewareStage.ON_ERROR];

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null;

/** What a hook must return at each stage; the message says what was wrong, `null` when fine. */
const CHECKS: { [S in PayloadStage]: (v: unknown) => string | null } = {
  beforeRoute: (v) => (typeof v === "string" ? null : "must return the message (a string)"),
  afterRoute: (v) =>
    isObject(v) && Array.isArray(v["candidates"]) && "best" in v
      ? null
      : "must return the route ({ candidates, best })",
  beforeInvoke: (v) =>
    isObject(v) &&
    typeof v["handler"] === "string" &&
    v["handler"] !== "" &&
    AgentInputSchema.safeParse(v["input"]).success
      ? null
      : "must return { handler, input } with a valid AgentInput",
  afterInvoke: (v) =>
    AgentResultSchema.safeParse(v).success ? null : "must return a valid AgentResult",
  beforeRespond: (v) =>
    isObject(v) &&
    typeof v["text"] === "string" &&
    (AGENT_STATUSES as readonly unknown[]).includes(v["status"])
      ? null
      : "must return the response ({ text, status, handler, data, error })",
};

/** The display name of a middleware. */
export function middlewareName(mw: Middleware): string {
  if (typeof mw.name === "string" && mw.name !== "") return mw.name;
  const ctor = (mw as { constructor?: { name?: string } }).constructor?.name;
  return ctor !== undefined && ctor !== "Object" ? ctor : "anonymous middleware";
}

/**
 * Runs middleware hooks in registration order. A hook that throws, or returns something that is
 * not a payload of its stage, stops the stage with an error (recorded as a `middleware.error`
 * event); the caller then runs {@link onError} and fails the request.
 *
 * @example
 * const pipeline = new MiddlewarePipeline([new LoggingMiddleware()]);
 * const message = await pipeline.run("beforeRoute", "hello", ctx);
 */
export class MiddlewarePipeline {
  readonly #middleware: readonly Middleware[];
  readonly #byStage = new Map<string, Middleware[]>();

  constructor(middleware: readonly Middleware[] = []) {
    if (!Array.isArray(middleware)) {
      throw new NervaError(
        ErrorCode.INVALID_OPTIONS,
        "Invalid options.middleware: must be an array of middleware objects, e.g. [new LoggingMiddleware()].",
        { issues: [{ path: "options.middleware", message: "must be an array" }] },
      );
    }
    middleware.forEach((mw, i) => {
      if (!isObject(mw)) {
        throw new NervaError(
          ErrorCode.INVALID_OPTIONS,
          `Invalid options.middleware[${i}]: must be an object with hooks (beforeRoute, afterRoute, beforeInvoke, afterInvoke, beforeRespond, onError).`,
          { issues: [{ path: `options.middleware.${i}`, message: "must be an object" }] },
        );
      }
      for (const stage of ALL_STAGES) {
        const hook = (mw as unknown as Record<string, unknown>)[stage];
        if (hook === undefined) continue;
        if (typeof hook !== "function") {
          throw new NervaError(
            ErrorCode.INVALID_OPTIONS,
            `Invalid options.middleware[${i}].${stage}: must be a method, got ${typeof hook}.`,
            {
              issues: [{ path: `options.middleware.${i}.${stage}`, message: "must be a function" }],
            },
          );
        }
        let list = this.#byStage.get(stage);
        if (list === undefined) this.#byStage.set(stage, (list = []));
        list.push(mw);
      }
    });
    this.#middleware = Object.freeze([...middleware]);
  }

  /** The registered middleware, in order. */
  get middleware(): readonly Middleware[] {
    return this.#middleware;
  }

  /** Whether any middleware implements `stage`. */
  has(stage: MiddlewareStage): boolean {
    return this.#byStage.has(stage);
  }

  /** Passes `payload` through every hook of `stage`, in order, inside a `middleware.<stage>` span. */
  async run<S extends PayloadStage>(
    stage: S,
    payload: StagePayloads[S],
    ctx: ExecContext,
  ): Promise<StagePayloads[S]> {
    const list = this.#byStage.get(stage);
    if (list === undefined) return payload;
    const span = ctx.startSpan(`middleware.${stage}`, { count: list.length });
    let current: unknown = payload;
    for (const mw of list) {
      const name = middlewareName(mw);
      try {
        const hook = (mw as unknown as Record<string, (p: unknown, c: ExecContext) => unknown>)[
          stage
        ] as (p: unknown, c: ExecContext) => unknown;
        const next = await hook.call(mw, current, ctx);
        // A payload passed on unchanged was already valid; anything else is checked.
        const problem = next === current ? null : CHECKS[stage](next);
        if (problem !== null) {
          throw new NervaError(
            ErrorCode.INTERNAL,
            `Middleware "${name}".${stage} ${problem} (got ${next === undefined ? "undefined" : typeof next}); the request is stopped rather than continued with the previous payload.`,
            { details: { middleware: name, stage } },
          );
        }
        current = next;
      } catch (err) {
        ctx.event("middleware.error", {
          middleware: name,
          stage,
          error: err instanceof Error ? err.message : String(err),
        });
        span.end("error", `${name}: ${err instanceof Error ? err.message : String(err)}`);
        throw err;
      }
    }
    span.end("ok");
    return current as StagePayloads[S];
  }

  /**
   * Tells every `onError` hook about `error`. A hook that throws is recorded as a
   * `middleware.error` event and does not stop the others; the original error stands.
   */
  async onError(error: unknown, ctx: ExecContext, stage: PipelineStage): Promise<void> {
    const list = this.#byStage.get(MiddlewareStage.ON_ERROR);
    if (list === undefined) return;
    for (const mw of list) {
      try {
        await (mw.onError as NonNullable<Middleware["onError"]>).call(mw, error, ctx, stage);
      } catch (err) {
        ctx.event("middleware.error", {
          middleware: middlewareName(mw),
          stage: MiddlewareStage.ON_ERROR,
          error: err instanceof Error ? err.message : String(err),
        });
      }
    }
  }
}
