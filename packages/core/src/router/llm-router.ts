import { z } from "zod";
import type { ExecContext } from "../context/exec-context.js";
import { ErrorCode, NervaError } from "../errors.js";
import { messageOf } from "../runtime/results.js";
import { runWithDeadline } from "../runtime/deadline.js";
import {
  HandlerDescriptionsSchema,
  checkClassifyArgs,
  onlySet,
  parseRouterOptions,
  preview,
  rank,
} from "./rank.js";
import type {
  ClassifyOptions,
  HandlerDescription,
  RouteCandidate,
  RouteResult,
  Router,
} from "./types.js";

/**
 * Asks a model which handlers fit `message`. It is shown only the handlers the context may use
 * (and, in a hybrid, only the shortlisted ones). Resolve an array of `{ name, score, reason? }`
 * (or `{ candidates: [...] }`); `ctx.signal` aborts at the router's timeout or the request's
 * deadline, and usage can be charged with `ctx.recordTokens`.
 *
 * @example
 * const classify: LlmClassifyFunction = async (message, handlers, ctx) => {
 *   const reply = await callModel(promptFor(message, handlers), { signal: ctx.signal });
 *   ctx.recordTokens(reply.usage);
 *   return JSON.parse(reply.text); // [{ name: "flight_agent", score: 0.9, reason: "asks to book" }]
 * };
 */
export type LlmClassifyFunction = (
  message: string,
  handlers: readonly HandlerDescription[],
  ctx: ExecContext,
) => Promise<unknown> | unknown;

const LlmRouterOptionsSchema = z
  .object({
    classify: z.custom<LlmClassifyFunction>((v) => typeof v === "function", "must be a function"),
    handlers: HandlerDescriptionsSchema,
    timeoutSeconds: z.number().positive().finite().default(30),
  })
  .strict();

/**
 * Options of {@link LlmRouter}: the classify function, the handlers it chooses between, and how
 * long one classification may take (default 30 s, never past the request's deadline).
 *
 * @example
 * const options: LlmRouterOptions = { classify, handlers: [{ name: "flight_agent", description: "Books flights" }], timeoutSeconds: 10 };
 */
export type LlmRouterOptions = z.input<typeof LlmRouterOptionsSchema>;

const FIX =
  'Pass { classify: async (message, handlers, ctx) => [{ name, score, reason }], handlers: [{ name: "agent", description: "what it does" }], timeoutSeconds?: number > 0 }.';

const EntrySchema = z.object({
  name: z.string().min(1),
  score: z.number(),
  reason: z.string().optional(),
});

/**
 * Routes with a model. The model's answer is untrusted input: names that are not registered (or
 * not offered to it) are dropped, entries without a finite numeric `score` are dropped, scores
 * are clamped to [0, 1], and each correction is recorded as a ctx event
 * (`router.llm_unknown_handler`, `router.llm_invalid_entry`, `router.llm_score_clamped`). An
 * answer that is not a list at all rejects with `NervaError` INTERNAL. When the context may use
 * none of the handlers, the model is not called.
 *
 * @example
 * const router = new LlmRouter({
 *   handlers: [{ name: "flight_agent", description: "Books flights" }, { name: "chat_agent", description: "Small talk" }],
 *   classify: async (message, handlers) => [{ name: "flight_agent", score: 0.9, reason: "mentions a flight" }],
 * });
 * const { best } = await router.classify("I need a plane to Rome", ctx);
 */
export class LlmRouter implements Router {
  readonly #classify: LlmClassifyFunction;
  readonly #handlers: readonly HandlerDescription[];
  readonly #timeoutSeconds: number;

  constructor(options: LlmRouterOptions) {
    const o = parseRouterOptions(LlmRouterOptionsSchema, options, FIX);
    this.#classify = o.classify;
    this.#handlers = Object.freeze(o.handlers.map((h) => Object.freeze({ ...h })));
    this.#timeoutSeconds = o.timeoutSeconds;
  }

  /** The handlers this router chooses between. */
  get handlers(): readonly HandlerDescription[] {
    return this.#handlers;
  }

  async classify(
    message: string,
    ctx: ExecContext,
    options?: ClassifyOptions,
  ): Promise<RouteResult> {
    checkClassifyArgs(message, ctx);
    const only = onlySet(options);
    const offered = this.#handlers.filter(
      (h) => (only === null || only.has(h.name)) && ctx.permissions.canUseAgent(h.name),
    );
    if (offered.length === 0) return rank([], ctx, only);
    const outcome = await runWithDeadline(ctx, null, this.#timeoutSeconds, (scoped) =>
      this.#classify(message, offered, scoped),
    );
    if (outcome.kind === "ended") throw outcome.reason;
    if (outcome.kind === "failed") {
      throw new NervaError(
        ErrorCode.INTERNAL,
        `LlmRouter: the classify function failed: ${messageOf(outcome.error)}`,
        { cause: outcome.error },
      );
    }
    return rank(this.#validate(outcome.value, offered, ctx), ctx, only);
  }

  #validate(
    answer: unknown,
    offered: readonly HandlerDescription[],
    ctx: ExecContext,
  ): RouteCandidate[] {
    const list: unknown =
      typeof answer === "object" && answer !== null && !Array.isArray(answer)
        ? (answer as { candidates?: unknown }).candidates
        : answer;
    if (!Array.isArray(list)) {
      throw new NervaError(
        ErrorCode.INTERNAL,
        `LlmRouter: the classify function returned ${preview(JSON.stringify(answer) ?? String(answer), 80)}; expected an array of { name, score, reason } (or { candidates: [...] }).`,
        { issues: [{ path: "classify()", message: "must resolve an array of candidates" }] },
      );
    }
    const names = new Set(offered.map((h) => h.name));
    const out: RouteCandidate[] = [];
    list.forEach((item: unknown, index) => {
      const parsed = EntrySchema.safeParse(item);
      if (!parsed.success) {
        const problem = parsed.error.issues
          .map((i) => `${i.path.join(".") || "entry"}: ${i.message}`)
          .join("; ");
        ctx.event("router.llm_invalid_entry", { index, problem });
        return;
      }
      const { name, score, reason } = parsed.data;
      if (!names.has(name)) {
        ctx.event("router.llm_unknown_handler", { index, name: preview(name, 128) });
        return;
      }
      if (score < 0 || score > 1) ctx.event("router.llm_score_clamped", { index, name, score });
      out.push({
        name,
        score,
        reason: reason === undefined ? "chosen by the model" : preview(reason, 300),
      });
    });
    return out;
  }
}
