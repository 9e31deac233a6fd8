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
  rank,
} from "./rank.js";
import type { ClassifyOptions, HandlerDescription, RouteResult, Router } from "./types.js";

/**
 * Turns texts into vectors, one per text, in order (all of the same dimension). Plug in any
 * embedding model; the same function can serve memory's similarity search.
 *
 * @example
 * const embed: EmbedFunction = async (texts, signal) => (await openai.embeddings.create({ model, input: texts })).data.map((d) => d.embedding);
 */
export type EmbedFunction = (texts: string[], signal?: AbortSignal) => Promise<number[][]>;

const EmbeddingRouterOptionsSchema = z
  .object({
    embed: z.custom<EmbedFunction>((v) => typeof v === "function", "must be a function"),
    handlers: HandlerDescriptionsSchema,
    minScore: z.number().min(0).max(1).default(0),
  })
  .strict();

/**
 * Options of {@link EmbeddingRouter}. Candidates scoring below `minScore` (default 0) are dropped.
 *
 * @example
 * const options: EmbeddingRouterOptions = { embed, handlers: [{ name: "flight_agent", description: "Books flights" }], minScore: 0.3 };
 */
export type EmbeddingRouterOptions = z.input<typeof EmbeddingRouterOptionsSchema>;

const FIX =
  'Pass { embed: async (texts) => number[][], handlers: [{ name: "agent", description: "what it does" }], minScore?: number in [0, 1] }.';

/** A unit-length copy of `v`, or `null` for a zero vector (no direction to compare). */
function normalize(v: readonly number[]): Float64Array | null {
  let sum = 0;
  for (const x of v) sum += x * x;
  if (sum === 0) return null;
  const inv = 1 / Math.sqrt(sum);
  const out = new Float64Array(v.length);
  for (let i = 0; i < v.length; i++) out[i] = v[i]! * inv;
  return out;
}

function checkVectors(vectors: unknown, count: number, dimension: number | null): number[][] {
  const fail = (problem: string): never => {
    throw new NervaError(
      ErrorCode.INTERNAL,
      `EmbeddingRouter: the embed function ${problem}. It must resolve one array of finite numbers per text, in order, all of the same length.`,
      { issues: [{ path: "embed", message: problem }] },
    );
  };
  if (!Array.isArray(vectors)) return fail(`returned ${typeof vectors}, not an array`);
  if (vectors.length !== count) {
    return fail(`returned ${vectors.length} vectors for ${count} texts`);
  }
  let dim = dimension;
  vectors.forEach((v: unknown, i) => {
    if (!Array.isArray(v) || v.length === 0) return fail(`returned a non-vector at index ${i}`);
    if (!v.every((x) => typeof x === "number" && Number.isFinite(x))) {
      return fail(`returned a non-finite number in vector ${i}`);
    }
    if (dim !== null && v.length !== dim) {
      return fail(`returned vectors of different lengths (${dim} and ${v.length})`);
    }
    dim = v.length;
  });
  return vectors as number[][];
}

/**
 * Routes by cosine similarity between the message and each handler's description. Descriptions
 * are embedded once, in one batch, on the first `classify` (concurrent first calls share that
 * batch; a failed batch is retried on the next call); each message costs one `embed` call, which
 * gets an AbortSignal that aborts at the request's deadline or cancel (`classify` rejects then
 * with the TIMEOUT or CANCELLED `NervaError`). Score = max(0, cosine).
 *
 * @example
 * const router = new EmbeddingRouter({
 *   embed,
 *   handlers: [
 *     { name: "flight_agent", description: "Search and book flights, airlines, airports" },
 *     { name: "weather_agent", description: "Weather forecasts, temperature, rain" },
 *   ],
 * });
 * const { best } = await router.classify("Will it rain tomorrow?", ctx);
 */
export class EmbeddingRouter implements Router {
  readonly #embed: EmbedFunction;
  readonly #handlers: readonly HandlerDescription[];
  readonly #minScore: number;
  #descriptions: Promise<(Float64Array | null)[]> | null = null;
  #dimension: number | null = null;

  constructor(options: EmbeddingRouterOptions) {
    const o = parseRouterOptions(EmbeddingRouterOptionsSchema, options, FIX);
    this.#embed = o.embed;
    this.#handlers = Object.freeze(o.handlers.map((h) => Object.freeze({ ...h })));
    this.#minScore = o.minScore;
  }

  /** The handlers this router chooses between. */
  get handlers(): readonly HandlerDescription[] {
    return this.#handlers;
  }

  #descriptionVectors(): Promise<(Float64Array | null)[]> {
    if (this.#descriptions === null) {
      const texts = this.#handlers.map((h) => h.description);
      const pending = Promise.resolve()
        .then(() => this.#embed(texts))
        .then((vectors) => {
          const checked = checkVectors(vectors, texts.length, null);
          this.#dimension = checked[0]?.length ?? null;
          return checked.map(normalize);
        });
      pending.catch(() => {
        if (this.#descriptions === pending) this.#descriptions = null;
      });
      this.#descriptions = pending;
    }
    return this.#descriptions;
  }

  async classify(
    message: string,
    ctx: ExecContext,
    options?: ClassifyOptions,
  ): Promise<RouteResult> {
    checkClassifyArgs(message, ctx);
    try {
      const only = onlySet(options);
      const targets = this.#handlers
        .map((h, i) => ({ h, i }))
        .filter(
          ({ h }) => (only === null || only.has(h.name)) && ctx.permissions.canUseAgent(h.name),
        );
      if (targets.length === 0) return rank([], ctx, only);
      const outcome = await runWithDeadline(ctx, null, undefined, async (scoped) => {
        const vectors = await this.#descriptionVectors();
        const q = checkVectors(await this.#embed([message], scoped.signal), 1, this.#dimension);
        return { descriptions: vectors, query: normalize(q[0]!) };
      });
      if (outcome.kind === "ended") throw outcome.reason;
      if (outcome.kind === "failed") throw outcome.error;
      const { descriptions, query } = outcome.value;
      const raw = targets.map(({ h, i }) => {
        const d = descriptions[i] ?? null;
        let cosine = 0;
        if (query !== null && d !== null) {
          for (let k = 0; k < d.length; k++) cosine += d[k]! * query[k]!;
        }
        const score = Math.max(0, cosine);
        return {
          name: h.name,
          score,
          reason: `cosine similarity ${score.toFixed(3)} to the description`,
        };
      });
      return rank(
        raw.filter((c) => c.score >= this.#minScore),
        ctx,
        only,
      );
    } catch (err) {
      if (err instanceof NervaError) throw err;
      throw new NervaError(
        ErrorCode.INTERNAL,
        `EmbeddingRouter: the embed function failed: ${messageOf(err)}`,
        { cause: err },
      );
    }
  }
}
