import type { ExecContext } from "../context/exec-context.js";
import { ErrorCode, NervaError } from "../errors.js";
import { AgentInputSchema, AgentResultSchema } from "../types/agent.js";
import { AGENT_STATUSES } from "../types/status.js";
import {
  MIDDLEWARE_HOOKS,
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
  before_route: string;
  after_route: RouteResult;
  before_invoke: InvocationRequest;
  after_invoke: AgentResult;
  before_respond: OrchestratorResponse;
}
type PayloadStage = keyof StagePayloads;

const ALL_STAGES: readonly MiddlewareStage[] = Object.values(MiddlewareStage);

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null;

/** What a hook must return at each stage; the message says what was wrong, `null` when fine. */
const CHECKS: { [S in PayloadStage]: (v: unknown) => string | null } = {
  before_route: (v) => (typeof v === "string" ? null : "must return the message (a string)"),
  after_route: (v) =>
    isObject(v) && Array.isArray(v["candidates"]) && "best" in v
      ? null
      : "must return the route ({ candidates, best })",
  before_invoke: (v) =>
    isObject(v) &&
    typeof v["handler"] === "string" &&
    v["handler"] !== "" &&
    AgentInputSchema.safeParse(v["input"]).success
      ? null
      : "must return { handler, input } with a valid AgentInput",
  after_invoke: (v) =>
    AgentResultSchema.safeParse(v).success ? null : "must return a valid AgentResult",
  before_respond: (v) =>
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
 * const message = await pipeline.run(MiddlewareStage.BEFORE_ROUTE, "hello", ctx);
 */
export class MiddlewarePipeline {
  readonly #middleware: readonly Middleware[];
  readonly #byStage = new Map<MiddlewareStage, Middleware[]>();

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
        const method = MIDDLEWARE_HOOKS[stage];
        const hook = (mw as unknown as Record<string, unknown>)[method];
        if (hook === undefined) continue;
        if (typeof hook !== "function") {
          throw new NervaError(
            ErrorCode.INVALID_OPTIONS,
            `Invalid options.middleware[${i}].${method}: must be a method, got ${typeof hook}.`,
            {
              issues: [
                { path: `options.middleware.${i}.${method}`, message: "must be a function" },
              ],
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

  /**
   * Passes `payload` through every hook of `stage`, in order, inside a `middleware.<stage>` span
   * (e.g. `middleware.before_route`).
   */
  async run<S extends PayloadStage>(
    stage: S,
    payload: StagePayloads[S],
    ctx: ExecContext,
  ): Promise<StagePayloads[S]> {
    const list = this.#byStage.get(stage);
    if (list === undefined) return payload;
    const span = ctx.startSpan(`middleware.${stage}`, { count: list.length });
    const method = MIDDLEWARE_HOOKS[stage];
    let current: unknown = payload;
    for (const mw of list) {
      const name = middlewareName(mw);
      try {
        const hook = (mw as unknown as Record<string, (p: unknown, c: ExecContext) => unknown>)[
          method
        ] as (p: unknown, c: ExecContext) => unknown;
        const next = await hook.call(mw, current, ctx);
        // A payload passed on unchanged was already valid; anything else is checked.
        const problem = next === current ? null : CHECKS[stage](next);
        if (problem !== null) {
          throw new NervaError(
            ErrorCode.INTERNAL,
            `Middleware "${name}".${method} ${problem} (got ${next === undefined ? "undefined" : typeof next}); the request is stopped rather than continued with the previous payload.`,
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
