import { z } from "zod";
import type { RunEvent } from "../../runs/types.js";

const positiveSeconds = z.number().positive().finite();

/** How an entry point is triggered. */
export const TriggerSchema = z.discriminatedUnion("type", [
  /** By `runtime.trigger` / `triggerAndWait` in code. */
  z.object({ type: z.literal("manual") }).strict(),
  /** By an HTTP route of the app (the bridges' trigger / events / input routes). */
  z.object({ type: z.literal("api") }).strict(),
  /** By `runtime.handleWebhook(path, body, ctx)` from the app's route for `path`. */
  z
    .object({
      type: z.literal("webhook"),
      path: z
        .string()
        .regex(/^\/[A-Za-z0-9/_.-]{0,200}$/, 'must be a URL path like "/hooks/refund"'),
    })
    .strict(),
  /**
   * On a schedule: every `intervalSeconds`, or at each time a 5-field `cron` expression names
   * (UTC). Each slot fires once across every process sharing the store (idempotency key).
   */
  z
    .object({
      type: z.literal("timer"),
      cron: z.string().min(9).max(200).optional(),
      intervalSeconds: z
        .number()
        .min(1)
        .max(366 * 24 * 3600)
        .optional(),
    })
    .strict()
    .refine((t) => (t.cron === undefined) !== (t.intervalSeconds === undefined), {
      message: "give exactly one of cron or intervalSeconds",
    }),
  /**
   * By events (run event types, e.g. `run.succeeded`, `node.completed`) of other runs of this
   * host. A run never triggers its own
   * entry point again through events (directly or through a chain of event entry points), and
   * a chain stops after `maxDepth` hops.
   */
  z
    .object({
      type: z.literal("event"),
      events: z.array(z.string().min(1).max(100)).min(1),
      /** Only events of runs of these entry points. */
      from: z.array(z.string()).min(1).optional(),
      maxDepth: z.number().int().min(1).max(20).default(3),
    })
    .strict(),
]);
export type TriggerSpec = z.input<typeof TriggerSchema>;

export const EntryPointSchema = z
  .object({
    id: z
      .string()
      .regex(/^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$/, "must be 1-32 letters, digits, '_' or '-'"),
    name: z.string().max(200).optional(),
    /** Where its runs start (default: the graph's entry). */
    entryNode: z.string().optional(),
    trigger: TriggerSchema.default({ type: "manual" }),
    /** Runs of this entry point running at once (per process). */
    concurrency: z.number().int().min(1).max(1000).optional(),
    /** Runs waiting to start beyond which a trigger is RATE_LIMITED. */
    backlog: z.number().int().min(1).max(1_000_000).default(100),
    /** Deadline of each attempt of a run. */
    timeoutSeconds: positiveSeconds.optional(),
    priority: z.number().int().min(0).max(2_097_151).default(0),
    /** For timer and event entry points: the start state of a run. */
    input: z
      .custom<(source: TriggerSource) => Record<string, unknown>>(
        (v) => typeof v === "function",
        "must be a function",
      )
      .optional(),
  })
  .strict();

/**
 * An entry point of a graph host (one queue and one runner per entry point): its trigger,
 * where runs start, and its own concurrency and backlog.
 *
 * @example
 * const nightly: EntryPointSpec = { id: "nightly", entryNode: "lookup", trigger: { type: "timer", cron: "0 3 * * *" } };
 */
export type EntryPointSpec = z.input<typeof EntryPointSchema>;
export type EntryPoint = z.output<typeof EntryPointSchema> & { readonly concurrency: number };

/** What made a timer or event entry point fire (given to its `input`). */
export type TriggerSource =
  | { readonly type: "timer"; readonly slot: number }
  | { readonly type: "event"; readonly event: RunEvent; readonly entryPoint: string };

/** The public description of an entry point (`getEntryPoints()`). */
export interface EntryPointInfo {
  readonly id: string;
  readonly name: string;
  readonly entryNode: string;
  readonly trigger: z.output<typeof TriggerSchema>;
  readonly concurrency: number;
  readonly backlog: number;
  /** The run queue its runs go through. */
  readonly queue: string;
}
