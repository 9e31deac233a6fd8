import { z } from "zod";
import type { ExecContext } from "../context/exec-context.js";
import { ErrorCode, isNervaError, parseOrThrow } from "../errors.js";
import type { RouteResult } from "../router/types.js";
import type { AgentResult } from "../types/agent.js";
import type { Middleware, OrchestratorResponse, PipelineStage } from "./types.js";

/** Labels of one counter, e.g. `{ handler: "flight_agent", status: "success" }`. */
export type MetricLabels = Readonly<Record<string, string>>;

const OptionsSchema = z
  .object({
    /** Called on every increment (forward to Prometheus, StatsD, ...). */
    onIncrement: z
      .custom<(name: string, labels: MetricLabels, value: number) => void>(
        (v) => typeof v === "function",
        "must be a function",
      )
      .optional(),
  })
  .strict();
/** Options of {@link MetricsMiddleware}. */
export type MetricsMiddlewareOptions = z.input<typeof OptionsSchema>;

function keyOf(name: string, labels: MetricLabels): string {
  const parts = Object.keys(labels)
    .sort()
    .map((k) => `${k}=${JSON.stringify(labels[k])}`);
  return parts.length === 0 ? name : `${name}{${parts.join(",")}}`;
}

/**
 * In-process counters: `requests_total`, `routed_total{handler}`, `unrouted_total`,
 * `invocations_total{handler,status}`, `responses_total{status}`, `errors_total{stage,code}`.
 * Read them with {@link snapshot}; forward them with `onIncrement`.
 *
 * @example
 * const metrics = new MetricsMiddleware();
 * // ... after some requests:
 * metrics.get("invocations_total", { handler: "flight_agent", status: "success" });
 */
export class MetricsMiddleware implements Middleware {
  readonly name = "metrics";
  readonly #counters = new Map<string, number>();
  readonly #onIncrement: ((name: string, labels: MetricLabels, value: number) => void) | undefined;

  constructor(options: MetricsMiddlewareOptions = {}) {
    this.#onIncrement = parseOrThrow(
      OptionsSchema,
      options,
      ErrorCode.INVALID_OPTIONS,
      "options",
      "Pass { onIncrement?: (name, labels, value) => void }.",
    ).onIncrement;
  }

  #inc(name: string, labels: MetricLabels = {}): void {
    const key = keyOf(name, labels);
    const value = (this.#counters.get(key) ?? 0) + 1;
    this.#counters.set(key, value);
    this.#onIncrement?.(name, labels, value);
  }

  /** Current value of a counter (0 if never incremented). */
  get(name: string, labels: MetricLabels = {}): number {
    return this.#counters.get(keyOf(name, labels)) ?? 0;
  }

  /** Every counter, keyed like `invocations_total{handler="a",status="success"}`. */
  snapshot(): Record<string, number> {
    return Object.fromEntries([...this.#counters].sort(([a], [b]) => (a < b ? -1 : 1)));
  }

  reset(): void {
    this.#counters.clear();
  }

  beforeRoute(message: string, _ctx: ExecContext): string {
    this.#inc("requests_total");
    return message;
  }

  afterRoute(route: RouteResult, _ctx: ExecContext): RouteResult {
    if (route.best === null) this.#inc("unrouted_total");
    else this.#inc("routed_total", { handler: route.best.name });
    return route;
  }

  afterInvoke(result: AgentResult, _ctx: ExecContext): AgentResult {
    this.#inc("invocations_total", { handler: result.handler, status: result.status });
    return result;
  }

  beforeRespond(response: OrchestratorResponse, _ctx: ExecContext): OrchestratorResponse {
    this.#inc("responses_total", { status: response.status });
    return response;
  }

  onError(error: unknown, _ctx: ExecContext, stage: PipelineStage): void {
    this.#inc("errors_total", { stage, code: isNervaError(error) ? error.code : "UNKNOWN" });
  }
}
