import { ErrorCode, parseOrThrow } from "@nerva/core";
import { z } from "zod";

/** A whole number from an environment variable's text (`""` counts as unset). */
const whole = (min: number, fallback: number) =>
  z
    .string()
    .optional()
    .transform((v) => (v === undefined || v.trim() === "" ? String(fallback) : v.trim()))
    .pipe(z.string().regex(/^\d+$/, `must be a whole number >= ${min}`))
    .transform(Number)
    .pipe(z.number().int().min(min).max(Number.MAX_SAFE_INTEGER));

const ServiceEnv = z.object({
  REDIS_URL: z
    .string()
    .optional()
    .transform((v) => (v === undefined || v.trim() === "" ? null : v.trim()))
    .pipe(
      z
        .string()
        .regex(/^rediss?:\/\//, "must start with redis:// or rediss://")
        .nullable(),
    ),
  NERVA_REDIS_PREFIX: z
    .string()
    .optional()
    .transform((v) => (v === undefined || v === "" ? "nerva-example" : v))
    .pipe(z.string().regex(/^[A-Za-z0-9._:-]{1,50}$/, "must be 1-50 of A-Z a-z 0-9 . _ : -")),
  RATE_LIMIT_PER_MINUTE: whole(1, 60),
  BUDGET_TOKENS_PER_DAY: whole(1, 20_000),
  BUDGET_RESERVE_TOKENS: z.string().optional(),
  RUNS_LEASE_SECONDS: whole(1, 30),
  RUNS_CONCURRENCY: whole(1, 8),
});

/**
 * How an example app runs, from its environment:
 * - `redisUrl` (`REDIS_URL`): every piece of state in Redis, under `redisPrefix`
 *   (`NERVA_REDIS_PREFIX`, default `nerva-example`), so any number of replicas can run; `null`:
 *   the embedded defaults, in this process;
 * - `ratePerMinute` (`RATE_LIMIT_PER_MINUTE`, 60): `/chat` requests per user per minute;
 * - `budgetTokensPerDay` (`BUDGET_TOKENS_PER_DAY`, 20,000) and what each request in flight holds
 *   against it, `budgetReserveTokens` (`BUDGET_RESERVE_TOKENS`, a tenth of the budget);
 * - `leaseSeconds` (`RUNS_LEASE_SECONDS`, 30) and `runsConcurrency` (`RUNS_CONCURRENCY`, 8) of
 *   the worker every replica runs.
 *
 * @example
 * const config: ExampleConfig = exampleConfigOf({ REDIS_URL: "redis://127.0.0.1:6379" });
 */
export interface ExampleConfig {
  readonly redisUrl: string | null;
  readonly redisPrefix: string;
  readonly ratePerMinute: number;
  readonly budgetTokensPerDay: number;
  readonly budgetReserveTokens: number;
  readonly leaseSeconds: number;
  readonly runsConcurrency: number;
}

/**
 * Reads {@link ExampleConfig} from `env`. A bad value throws NervaError INVALID_OPTIONS naming
 * the variable, e.g. `env.RATE_LIMIT_PER_MINUTE: must be a whole number >= 1`.
 *
 * @example
 * const config = exampleConfigOf(process.env);
 * console.log(config.redisUrl === null ? "embedded" : "redis");
 */
export function exampleConfigOf(
  env: Readonly<Record<string, string | undefined>> = process.env,
): ExampleConfig {
  const e = parseOrThrow(
    ServiceEnv,
    env,
    ErrorCode.INVALID_OPTIONS,
    "env",
    "Fix the environment variable, or unset it for its default.",
  );
  const reserve = parseOrThrow(
    whole(0, Math.floor(e.BUDGET_TOKENS_PER_DAY / 10)),
    e.BUDGET_RESERVE_TOKENS,
    ErrorCode.INVALID_OPTIONS,
    "env.BUDGET_RESERVE_TOKENS",
    "Give the tokens one request holds (0 turns holds off), or unset it for a tenth of the budget.",
  );
  return {
    redisUrl: e.REDIS_URL,
    redisPrefix: e.NERVA_REDIS_PREFIX,
    ratePerMinute: e.RATE_LIMIT_PER_MINUTE,
    budgetTokensPerDay: e.BUDGET_TOKENS_PER_DAY,
    budgetReserveTokens: reserve,
    leaseSeconds: e.RUNS_LEASE_SECONDS,
    runsConcurrency: e.RUNS_CONCURRENCY,
  };
}
