import { z } from "zod";
import type { Memory } from "../memory/types.js";
import type { PolicyEngine } from "../policy/types.js";
import { RetryOptionsSchema } from "../runs/options.js";
import { RunQueue } from "../runs/run-queue.js";
import { Runner } from "../runs/runner.js";
import type { AgentRuntime } from "../runtime/types.js";
import type { ToolManager } from "../tools/types.js";
import { isTraceSink, type TraceSink } from "../tracing/sink.js";
import { EntryPointSchema } from "./entry-points.js";
import { SharedStateOptionsSchema } from "./shared-state.js";
import { isDefinedGraph } from "./define-graph.js";
import type { Graph } from "./types.js";

const positiveSeconds = z.number().positive().finite();
const obj = <T>(check: (v: Record<string, unknown>) => boolean, message: string) =>
  z.custom<T>(
    (v) => typeof v === "object" && v !== null && check(v as Record<string, unknown>),
    message,
  );

export const GraphHostOptionsSchema = z
  .object({
    graph: z.custom<Graph>(isDefinedGraph, "must be a graph made by defineGraph"),
    /** The runtime agent nodes invoke handlers through (in-process, subprocess, container...). */
    runtime: obj<AgentRuntime>(
      (v) => typeof v.invoke === "function" && typeof v.handlerNames === "function",
      "must be an AgentRuntime (e.g. new InProcessRuntime())",
    ),
    queue: z.custom<RunQueue>((v) => v instanceof RunQueue, "must be a RunQueue"),
    tools: obj<ToolManager>(
      (v) => typeof v.call === "function",
      "must be a ToolManager",
    ).optional(),
    memory: obj<Memory>((v) => typeof v.recall === "function", "must be a Memory").optional(),
    policy: obj<PolicyEngine>(
      (v) => typeof v.evaluate === "function",
      "must be a PolicyEngine",
    ).optional(),
    entryPoints: z
      .array(EntryPointSchema)
      .min(1)
      .default([{ id: "default", trigger: { type: "manual" }, backlog: 100, priority: 0 }]),
    /** Default concurrency of each entry point. */
    concurrency: z.number().int().min(1).max(1000).default(4),
    leaseSeconds: positiveSeconds.default(30),
    heartbeatSeconds: positiveSeconds.default(10),
    maxReclaims: z.number().int().min(0).max(1000).default(5),
    retry: RetryOptionsSchema.partial().default({}),
    /** An existing Runner: every entry point then shares its queue (`queue`) and its concurrency. */
    runner: z.custom<Runner>((v) => v instanceof Runner, "must be a Runner").optional(),
    /** HMAC key of sessionStates (>= 32 bytes); by default one is generated and kept by the store. */
    sessionKey: z
      .union([
        z.string().min(32),
        z.instanceof(Uint8Array).refine((b) => b.length >= 32, "must be >= 32 bytes"),
      ])
      .optional(),
    sharedState: SharedStateOptionsSchema.default({ isolation: "isolated", initial: {} }),
    /** Events held per subscriber before they are dropped and counted. */
    eventBufferSize: z.number().int().min(1).max(1_000_000).default(1000),
    /** Longest one attempt of a run may run (its handler timeout). */
    executionTimeoutSeconds: positiveSeconds.max(2_000_000).default(24 * 3600),
    workerId: z.string().min(1).max(200).optional(),
    /**
     * Where the spans and events of the runs go (`run`, `runtime.invoke`, `graph.node`,
     * the handlers' and tools' spans): given to the runner of each entry point. With `runner`,
     * give it to that Runner instead.
     */
    traceSink: z
      .custom<TraceSink>(isTraceSink, "must be a TraceSink (an object with onSpanEnd)")
      .nullable()
      .optional(),
    onError: z.custom<(err: unknown) => void>((v) => typeof v === "function").optional(),
  })
  .strict()
  .refine((o) => o.heartbeatSeconds < o.leaseSeconds, {
    message: "must be less than leaseSeconds",
    path: ["heartbeatSeconds"],
  })
  .refine((o) => o.runner === undefined || o.traceSink == null, {
    message:
      "is for the runners this GraphHost builds; with `runner`, pass traceSink to that Runner",
    path: ["traceSink"],
  });

/**
 * Options of {@link GraphHost}: the graph, the runtime its agent nodes use, the queue
 * (its store holds the runs), the kit primitives, the entry points, and either the
 * runner's options or an existing `runner`.
 */
export type GraphHostOptions = Omit<z.input<typeof GraphHostOptionsSchema>, "queue" | "runtime"> & {
  /** Where the graph's runs are kept; by default a queue of its own on an in-memory store. */
  readonly queue?: RunQueue;
  /** What agent nodes invoke handlers through; needed only when the graph has agent nodes. */
  readonly runtime?: AgentRuntime;
};
export type ParsedGraphHostOptions = z.output<typeof GraphHostOptionsSchema>;
