import type { ExecContext } from "../context/exec-context.js";
import { ERROR_POLICY, ErrorCode, NervaError, isNervaError } from "../errors.js";
import { clientData, clientError } from "../responder/failure-text.js";
import type { AgentResult, JsonValue } from "../types/agent.js";
import { AgentStatus } from "../types/status.js";
import type { Orchestrator } from "../orchestrator/orchestrator.js";
import type { AgentRuntime } from "../runtime/types.js";

/** One agent served as an MCP tool: its handler name, and what clients are told about it. */
export interface McpAgentTool {
  /** The handler name in the runtime; also the tool's name. */
  readonly name: string;
  readonly title?: string | undefined;
  readonly description?: string | undefined;
}

/**
 * Options of {@link createMcpHandler}: exactly one of `orchestrator` (its policy applies to every
 * call) or `runtime`, and the agents to serve.
 *
 * @example
 * const options: McpHandlerOptions = { orchestrator, agents: ["support", { name: "billing", description: "Invoices" }] };
 */
export interface McpHandlerOptions {
  readonly orchestrator?: Orchestrator | undefined;
  readonly runtime?: AgentRuntime | undefined;
  /** The agents served as tools, by handler name. No agent is served unless named here. */
  readonly agents: readonly (string | McpAgentTool)[];
  /** The server's name and version in the MCP handshake. Default "nerva", "0.1.0". */
  readonly serverName?: string | undefined;
  readonly serverVersion?: string | undefined;
  /** Open MCP sessions kept on this replica; the least recently used is closed past it. Default 100. */
  readonly maxSessions?: number | undefined;
}

/** What a client is told of one agent call: all of it client-safe. */
export interface McpAnswer {
  readonly status: AgentStatus;
  readonly handler: string;
  readonly text: string;
  readonly data: Readonly<Record<string, JsonValue>>;
}

/** Checked options: the runner of one agent call and the tools by name. */
export interface McpHandlerConfig {
  readonly invoke: (
    name: string,
    message: string,
    args: Record<string, string>,
    ctx: ExecContext,
  ) => Promise<McpAnswer>;
  readonly tools: ReadonlyMap<string, McpAgentTool>;
  readonly serverName: string;
  readonly serverVersion: string;
  readonly maxSessions: number;
}

const NAME = /^[A-Za-z0-9_.-]{1,128}$/;

function invalid(path: string, message: string): NervaError {
  return new NervaError(
    ErrorCode.INVALID_OPTIONS,
    `Invalid MCP handler options: ${path} ${message}`,
    {
      issues: [{ path, message }],
    },
  );
}

/** Validates `options` (NervaError INVALID_OPTIONS naming the field) before anything is built. */
export function parseMcpHandlerOptions(options: McpHandlerOptions): McpHandlerConfig {
  if (typeof options !== "object" || options === null)
    throw invalid("options", "must be an object.");
  const { orchestrator, runtime } = options;
  if ((orchestrator === undefined) === (runtime === undefined)) {
    throw invalid("options", "needs exactly one of orchestrator or runtime.");
  }
  const rt = orchestrator?.runtime ?? (runtime as AgentRuntime);
  if (!Array.isArray(options.agents) || options.agents.length === 0) {
    throw invalid("options.agents", "must name at least one agent to serve as a tool.");
  }
  const known = new Set(rt.handlerNames());
  const tools = new Map<string, McpAgentTool>();
  options.agents.forEach((entry, i) => {
    const tool = typeof entry === "string" ? { name: entry } : entry;
    const path = `options.agents[${i}]`;
    if (typeof tool?.name !== "string" || !NAME.test(tool.name)) {
      throw invalid(path, "must be a handler name of 1-128 letters, digits, '_', '-' or '.'.");
    }
    if (!known.has(tool.name)) {
      throw invalid(
        path,
        `names "${tool.name}", which the runtime does not have (it has: ${[...known].join(", ") || "none"}).`,
      );
    }
    if (tools.has(tool.name)) throw invalid(path, `names "${tool.name}" twice.`);
    tools.set(tool.name, tool);
  });
  const maxSessions = options.maxSessions ?? 100;
  if (!Number.isInteger(maxSessions) || maxSessions < 1) {
    throw invalid("options.maxSessions", "must be a positive integer.");
  }
  const invoke: McpHandlerConfig["invoke"] =
    orchestrator === undefined
      ? async (name, message, args, ctx) =>
          answerOf(await rt.delegate(name, { message, args }, ctx))
      : // A whole request of the orchestrator, with the tool's agent named instead of routed:
        // middleware, rate limits, budgets, memory and approvals apply as to any other request.
        (name, message, args, ctx) =>
          orchestrator.handle(message, ctx, { agent: name, args }).then(
            (r) => ({
              status: r.status,
              handler: r.handler,
              text: r.text,
              data: clientData(r.data),
            }),
            (err: unknown) => refusalOf(name, err),
          );
  return {
    invoke,
    tools,
    serverName: options.serverName ?? "nerva",
    serverVersion: options.serverVersion ?? "0.1.0",
    maxSessions,
  };
}

/** An agent's result as a client may read it (no operator text, no stderr). */
function answerOf(result: AgentResult): McpAnswer {
  return {
    status: result.status,
    handler: result.handler,
    text: clientError(result) ?? result.output,
    data: clientData(result.data),
  };
}

/**
 * A request the orchestrator refused or failed, as an error answer: a NervaError a client may read
 * (`RATE_LIMITED`, `APPROVAL_PENDING` with its approvalId...) with its message and details; any
 * other error as a generic text, its own message kept for the server's logs only.
 */
function refusalOf(name: string, err: unknown): McpAnswer {
  const policy = isNervaError(err) ? ERROR_POLICY[err.code] : undefined;
  if (!isNervaError(err) || policy === undefined || !policy.expose) {
    return {
      status: AgentStatus.ERROR,
      handler: name,
      text: "The agent could not answer (an internal error). Retry later.",
      data: { code: ErrorCode.INTERNAL },
    };
  }
  const details = policy.status < 500 || policy.status === 503 || policy.status === 504;
  return {
    status: AgentStatus.ERROR,
    handler: name,
    text: `${err.code}: ${err.message}`,
    data: {
      code: err.code,
      ...(details && err.details !== undefined
        ? (toJsonValue(err.details) as Record<string, JsonValue>)
        : {}),
    },
  };
}

function toJsonValue(value: unknown): JsonValue {
  return JSON.parse(JSON.stringify(value)) as JsonValue;
}
