import {
  SpanKind as OtelKind,
  SpanStatusCode,
  type Attributes,
  type SpanStatus,
} from "@opentelemetry/api";
import type { Span, SpanUsage } from "@nerva/core/context";

/** The GenAI operation a Nerva span stands for, by its name; `null` for every other span. */
export type GenAIOperation = "invoke_workflow" | "invoke_agent" | "execute_tool" | "chat";

/** The workflow name of `invoke_workflow` spans when the `handle` span does not carry one. */
export const DEFAULT_WORKFLOW = "nerva";

/** The operation of `span` (OpenTelemetry GenAI semantic conventions), or `null`. */
export function operationOf(name: string): GenAIOperation | null {
  switch (name) {
    case "handle":
      return "invoke_workflow";
    case "runtime.invoke":
      return "invoke_agent";
    case "tools.call":
      return "execute_tool";
    case "chat":
      return "chat";
    default:
      return null;
  }
}

/**
 * Attributes that carry what a user or a model said (prompts, answers, tool arguments and
 * results): exported only with `captureContent`.
 */
export const CONTENT_KEYS: ReadonlySet<string> = new Set([
  "gen_ai.input.messages",
  "gen_ai.output.messages",
  "gen_ai.system_instructions",
  "gen_ai.prompt",
  "gen_ai.completion",
  "gen_ai.tool.call.arguments",
  "gen_ai.tool.call.result",
  "gen_ai.retrieval.query.text",
  "gen_ai.retrieval.documents",
]);

/** What the conversion reads besides the span itself. */
export interface MappingSettings {
  readonly captureContent: boolean;
  readonly includeUserId: boolean;
}

/** The OTel span name of `span`: `{operation} {suffix}` for GenAI spans, else its own name. */
export function otelName(span: Span, op: GenAIOperation | null): string {
  return op === null ? span.name : `${op} ${otelNameSuffix(span, op)}`;
}

/** What follows the operation in a GenAI span's name: the workflow, agent, tool or model. */
export function otelNameSuffix(span: Span, op: GenAIOperation): string {
  const a = span.attributes;
  switch (op) {
    case "invoke_workflow":
      return String(a["gen_ai.workflow.name"] ?? DEFAULT_WORKFLOW);
    case "invoke_agent":
      return String(a.handler ?? "");
    case "execute_tool":
      return String(a.tool ?? "");
    case "chat":
      return String(a["gen_ai.request.model"] ?? a.model ?? "");
  }
}

/** The OTel kind: model calls and calls into another process are clients. */
export function otelKind(span: Span, op: GenAIOperation | null): OtelKind {
  if (op === "chat") return OtelKind.CLIENT;
  switch (span.kind) {
    case "client":
      return OtelKind.CLIENT;
    case "server":
      return OtelKind.SERVER;
    default:
      return OtelKind.INTERNAL;
  }
}

const UNSET: SpanStatus = Object.freeze({ code: SpanStatusCode.UNSET });

/** ERROR with the span's error message on failure; UNSET otherwise (OTel's advice for success). */
export function otelStatus(span: Span): SpanStatus {
  if (span.status !== "error") return UNSET;
  return span.error === null
    ? { code: SpanStatusCode.ERROR }
    : { code: SpanStatusCode.ERROR, message: span.error };
}

/**
 * The keys {@link otelAttributes} sets itself, after the span's own (a span attribute of one of
 * these names is overwritten in place, or kept by `??=`). Keep in step with it: the protobuf
 * encoder writes attributes in one pass and falls back to `otelAttributes` when a span carries
 * one of these (or a `nerva.*` key, or `request_id`, which could collide the same way).
 */
export const MAPPING_KEYS: ReadonlySet<string> = new Set([
  "gen_ai.operation.name",
  "gen_ai.conversation.id",
  "gen_ai.workflow.name",
  "gen_ai.agent.name",
  "gen_ai.tool.name",
  "gen_ai.tool.type",
  "server.address",
  "enduser.id",
  "gen_ai.usage.input_tokens",
  "gen_ai.usage.output_tokens",
  "gen_ai.usage.cache_read.input_tokens",
  "gen_ai.usage.reasoning.output_tokens",
  "error.type",
]);

/**
 * The OTel attributes of `span`. Dotted keys are already namespaced (`gen_ai.*`, `error.type`,
 * `nerva.*`) and pass through; Nerva's own bare keys (`handler`, `status`, ...) go under
 * `nerva.`. Then the GenAI attributes of the operation, usage, identity and the request id.
 * `mcpServer`: the MCP server a `tools.call` span reached (from its `mcp.call` child).
 */
export function otelAttributes(
  span: Span,
  op: GenAIOperation | null,
  settings: MappingSettings,
  mcpServer: string | undefined,
): Attributes {
  const out: Attributes = {};
  const a = span.attributes;
  for (const key in a) {
    if (key.includes(".")) {
      if (settings.captureContent || !CONTENT_KEYS.has(key)) out[key] = a[key];
    } else if (!mapped(op, key)) {
      out[nervaKey(key)] = a[key];
    }
  }
  // Once per request and process: on the span where the request starts here (its local root).
  if (span.isLocalRoot) out["nerva.request_id"] = span.requestId;
  if (op !== null) {
    out["gen_ai.operation.name"] = op;
    const session = span.sessionId;
    if (session !== null) out["gen_ai.conversation.id"] = session;
  }
  switch (op) {
    case "invoke_workflow":
      out["gen_ai.workflow.name"] ??= DEFAULT_WORKFLOW;
      break;
    case "invoke_agent":
      out["gen_ai.agent.name"] = String(a.handler ?? "");
      break;
    case "execute_tool":
      out["gen_ai.tool.name"] = String(a.tool ?? "");
      out["gen_ai.tool.type"] = mcpServer === undefined ? "function" : "extension";
      if (mcpServer !== undefined) out["server.address"] = mcpServer;
      break;
    default:
      if (span.name === "mcp.call" && typeof a.server === "string") {
        out["server.address"] = a.server;
      }
  }
  if (settings.includeUserId) {
    const user = span.userId;
    if (user !== null) out["enduser.id"] = user;
  }
  addUsage(out, span, op);
  if (span.status === "error" && out["error.type"] === undefined) {
    out["error.type"] = typeof a.status === "string" ? a.status : "_OTHER";
  }
  return out;
}

// Nerva's own attribute names are few and fixed: each prefixed string is made once.
const PREFIXED = new Map<string, string>();

export function nervaKey(key: string): string {
  let prefixed = PREFIXED.get(key);
  if (prefixed === undefined) {
    prefixed = `nerva.${key}`;
    if (PREFIXED.size < 1024) PREFIXED.set(key, prefixed);
  }
  return prefixed;
}

/** Bare keys that a GenAI attribute replaces. */
export function mapped(op: GenAIOperation | null, key: string): boolean {
  return (op === "invoke_agent" && key === "handler") || (op === "execute_tool" && key === "tool");
}

/** Whether any tokens or cost were recorded. */
export function spent(u: SpanUsage): boolean {
  return u.totalTokens > 0 || u.costUsd > 0 || u.promptTokens > 0 || u.completionTokens > 0;
}

/**
 * Own usage under the GenAI names (when any was recorded on the span), and subtree totals on
 * workflow and agent spans (when any was recorded in the subtree: no attribute reads as zero).
 */
function addUsage(out: Attributes, span: Span, op: GenAIOperation | null): void {
  const own = span.usage;
  if (spent(own)) {
    out["gen_ai.usage.input_tokens"] = own.promptTokens;
    out["gen_ai.usage.output_tokens"] = own.completionTokens;
    if (own.cachedInputTokens > 0) {
      out["gen_ai.usage.cache_read.input_tokens"] = own.cachedInputTokens;
    }
    if (own.reasoningTokens > 0) {
      out["gen_ai.usage.reasoning.output_tokens"] = own.reasoningTokens;
    }
    out["nerva.usage.cost_usd"] = own.costUsd;
  }
  if (op === "invoke_workflow" || op === "invoke_agent") {
    const total = span.totalUsage;
    if (!spent(total)) return;
    out["nerva.usage.total.input_tokens"] = total.promptTokens;
    out["nerva.usage.total.output_tokens"] = total.completionTokens;
    out["nerva.usage.total.cost_usd"] = total.costUsd;
  }
}
