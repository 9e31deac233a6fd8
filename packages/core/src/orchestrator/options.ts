import { z } from "zod";
import { ErrorCode, NervaError, parseOrThrow } from "../errors.js";
import type { Memory } from "../memory/types.js";
import { MiddlewarePipeline } from "../middleware/pipeline.js";
import { MiddlewareStage, type Middleware } from "../middleware/types.js";
import type { PolicyEngine } from "../policy/types.js";
import type { Registry } from "../registry/types.js";
import { PassthroughResponder } from "../responder/passthrough-responder.js";
import type { Channel, Responder } from "../responder/types.js";
import { onlyHandlerRouter } from "../router/only-handler-router.js";
import type { Router } from "../router/types.js";
import { HandlerNameSchema } from "../runtime/options.js";
import type { AgentRuntime } from "../runtime/types.js";
import type { ToolManager } from "../tools/types.js";
import { StatsRecorder } from "./stats.js";
import type { HandleOptions, OrchestratorOptions } from "./types.js";

const implementing = <T>(label: string, methods: readonly string[]) =>
  z.custom<T>(
    (v) =>
      typeof v === "object" &&
      v !== null &&
      methods.every((m) => typeof (v as Record<string, unknown>)[m] === "function"),
    `must implement ${label} (${methods.join(", ")})`,
  );

const ChannelSchema = z.union([
  z.string().min(1),
  z
    .object({
      format: z.enum(["plain", "markdown"]),
      maxLength: z.number().int().positive().nullable().optional(),
    })
    .strict(),
]);

const OptionsSchema = z
  .object({
    router: implementing<Router>("Router", ["classify"]).optional(),
    runtime: implementing<AgentRuntime>("AgentRuntime", ["invoke", "delegate"]),
    /** Registered on the runtime by the constructor (see OrchestratorOptions.agents). */
    agents: z.record(z.string(), z.unknown()).optional(),
    tools: implementing<ToolManager>("ToolManager", ["discover", "call"]).optional(),
    memory: implementing<Memory>("Memory", ["recall", "store"]).optional(),
    responder: implementing<Responder>("Responder", ["format", "formatChunk"]).optional(),
    registry: implementing<Registry>("Registry", ["register", "recordInvocation"]).optional(),
    policy: implementing<PolicyEngine>("PolicyEngine", ["evaluate", "charge"]).optional(),
    middleware: z.array(z.unknown()).optional(),
    channel: ChannelSchema.default("plain"),
    maxCandidates: z.number().int().min(1).max(20).default(3),
    remember: z.boolean().default(true),
    exposeTools: z.boolean().default(true),
  })
  .strict();

/**
 * An orchestrator's validated parts, and which middleware stages have hooks (so a request skips
 * the others without a lookup).
 */
export interface Wiring {
  readonly router: Router;
  readonly runtime: AgentRuntime;
  readonly tools: ToolManager | null;
  readonly memory: Memory | null;
  readonly responder: Responder;
  readonly registry: Registry | null;
  readonly policy: PolicyEngine | null;
  readonly stats: StatsRecorder | null;
  readonly pipeline: MiddlewarePipeline;
  readonly channel: Channel;
  readonly maxCandidates: number;
  readonly remember: boolean;
  readonly exposeTools: boolean;
  readonly hasBeforeRoute: boolean;
  readonly hasAfterRoute: boolean;
  readonly hasBeforeInvoke: boolean;
  readonly hasAfterInvoke: boolean;
  readonly hasBeforeRespond: boolean;
  /** Whether `router` / `responder` must run in a fork under their stage span (see below). */
  readonly scopeRouter: boolean;
  readonly scopeResponder: boolean;
}

/**
 * Whether an implementation must be called with a fork whose current span is its stage span:
 * unless it declares itself `spanless` (it opens no span, records no event and starts no work of
 * its own), which RuleRouter and PassthroughResponder do and any implementation may. The fork was
 * 10% of `handle()`'s overhead, and those two are what most requests run through.
 */
function needsScope(impl: { readonly spanless?: boolean }): boolean {
  return impl.spanless !== true;
}

/** Validates the options of `new Orchestrator(options)`; INVALID_OPTIONS names the field. */
export function wire(options: OrchestratorOptions & { readonly runtime: AgentRuntime }): Wiring {
  const o = parseOrThrow(
    OptionsSchema,
    options,
    ErrorCode.INVALID_OPTIONS,
    "options",
    "Pass { runtime } and optionally router (needed with more than one handler), tools, memory, responder, registry, policy, middleware: [...], channel, maxCandidates (1-20).",
  );
  const pipeline = new MiddlewarePipeline((o.middleware ?? []) as Middleware[]);
  const registry = o.registry ?? null;
  const responder = o.responder ?? new PassthroughResponder();
  const router = o.router ?? onlyHandlerRouter(o.runtime);
  return Object.freeze({
    router,
    runtime: o.runtime,
    tools: o.tools ?? null,
    memory: o.memory ?? null,
    responder,
    registry,
    policy: o.policy ?? null,
    stats: registry === null ? null : new StatsRecorder(registry, o.runtime),
    pipeline,
    channel: o.channel as Channel,
    maxCandidates: o.maxCandidates,
    remember: o.remember,
    exposeTools: o.exposeTools,
    hasBeforeRoute: pipeline.has(MiddlewareStage.BEFORE_ROUTE),
    hasAfterRoute: pipeline.has(MiddlewareStage.AFTER_ROUTE),
    hasBeforeInvoke: pipeline.has(MiddlewareStage.BEFORE_INVOKE),
    hasAfterInvoke: pipeline.has(MiddlewareStage.AFTER_INVOKE),
    hasBeforeRespond: pipeline.has(MiddlewareStage.BEFORE_RESPOND),
    scopeRouter: needsScope(router),
    scopeResponder: needsScope(responder),
  });
}

/** The channel of one call: its own (validated) or the orchestrator's. */
/** One call's checked options: how to format it, and the handler it names (if any). */
export interface CallOptions {
  readonly channel: Channel;
  readonly agent: string | null;
  readonly args: Readonly<Record<string, string>>;
}

const NO_ARGS: Readonly<Record<string, string>> = Object.freeze({});

const CallSchema = z
  .object({
    channel: z.unknown().optional(),
    agent: HandlerNameSchema.optional(),
    args: z.record(z.string().max(256), z.string().max(100_000)).optional(),
  })
  .strict();

/** `options` checked (INVALID_INPUT naming the field) with `fallback` as the channel. */
export function callOptionsOf(options: HandleOptions, fallback: Channel): CallOptions {
  const channel = channelOf(options, fallback);
  if (options.agent === undefined && options.args === undefined) {
    return { channel, agent: null, args: NO_ARGS };
  }
  const o = parseOrThrow(
    CallSchema,
    options,
    ErrorCode.INVALID_INPUT,
    "options",
    "Pass { channel?, agent?: a handler name, args?: { [key]: string } }.",
  );
  return {
    channel,
    agent: o.agent ?? null,
    args: o.args === undefined ? NO_ARGS : Object.freeze({ ...o.args }),
  };
}

export function channelOf(options: HandleOptions, fallback: Channel): Channel {
  if (options.channel === undefined) return fallback;
  return parseOrThrow(
    ChannelSchema,
    options.channel,
    ErrorCode.INVALID_INPUT,
    "options.channel",
    'Pass a channel name ("plain", "markdown", ...) or { format, maxLength }.',
  ) as Channel;
}

const MAX_MESSAGE = 1_000_000;

/** Throws INVALID_INPUT unless `message` is a string of at most 1,000,000 characters. */
export function checkMessage(message: unknown): asserts message is string {
  if (message === undefined) {
    throw new NervaError(
      ErrorCode.INVALID_INPUT,
      'Invalid message: required. Send the text to answer as a string, e.g. {"message": "hello"}.',
      { issues: [{ path: "message", message: "required" }] },
    );
  }
  if (typeof message !== "string" || message.length > MAX_MESSAGE) {
    throw new NervaError(
      ErrorCode.INVALID_INPUT,
      `Invalid message: must be a string of at most ${MAX_MESSAGE} characters (got ${typeof message === "string" ? `${message.length} characters` : typeof message}).`,
      { issues: [{ path: "message", message: "must be a string up to 1,000,000 characters" }] },
    );
  }
}
