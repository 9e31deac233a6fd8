import type { ExecContext } from "../context/exec-context.js";
import { ERROR_POLICY, ErrorCode, NervaError, isNervaError } from "../errors.js";
import { clientData, clientError } from "../responder/failure-text.js";
import type { AgentResult, JsonValue } from "../types/agent.js";
import { AgentStatus } from "../types/status.js";
import type { Orchestrator } from "../orchestrator/orchestrator.js";
import { GraphHost } from "../graph/host/graph-host.js";
import type { AgentRuntime } from "../runtime/types.js";
import { startStateSchema, type GraphToolConfig, type McpGraphTool } from "./graph-tools.js";

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
  readonly agents?: readonly (string | McpAgentTool)[] | undefined;
  /**
   * Graphs served as tools: a call starts a run with its arguments as the start state; a client
   * may ask for it as a task (the run id is the task id, reported by any replica on the store).
   */
  readonly graphs?: readonly McpGraphTool[] | undefined;
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
  readonly graphs: ReadonlyMap<string, GraphToolConfig>;
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
  const agents = options.agents ?? [];
  if (!Array.isArray(agents)) throw invalid("options.agents", "must be a list of handler names.");
  const known = new Set(rt.handlerNames());
  const tools = new Map<string, McpAgentTool>();
  agents.forEach((entry, i) => {
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
  const graphs = parseGraphTools(options.graphs, tools);
  if (tools.size === 0 && graphs.size === 0) {
    throw invalid(
      "options.agents",
      "must name at least one agent (or options.graphs one graph) to serve as a tool.",
    );
  }
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
    graphs,
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

function parseGraphTools(
  graphs: readonly McpGraphTool[] | undefined,
  agents: ReadonlyMap<string, McpAgentTool>,
): Map<string, GraphToolConfig> {
  const out = new Map<string, GraphToolConfig>();
  if (graphs === undefined) return out;
  if (!Array.isArray(graphs)) throw invalid("options.graphs", "must be a list of { name, host }.");
  graphs.forEach((g, i) => {
    const path = `options.graphs[${i}]`;
    if (typeof g?.name !== "string" || !NAME.test(g.name)) {
      throw invalid(`${path}.name`, "must be 1-128 letters, digits, '_', '-' or '.'.");
    }
    if (agents.has(g.name) || out.has(g.name))
      throw invalid(`${path}.name`, `"${g.name}" names two tools.`);
    if (!(g.host instanceof GraphHost)) throw invalid(`${path}.host`, "must be a GraphHost.");
    const infos = (g.host as GraphHost).getEntryPoints();
    const entryPoints = infos.map((e) => e.id);
    const entryPoint = g.entryPoint ?? entryPoints[0];
    const info = infos.find((e) => e.id === entryPoint);
    if (entryPoint === undefined || info === undefined) {
      throw invalid(
        `${path}.entryPoint`,
        `names "${String(entryPoint)}", which the host does not have (it has: ${entryPoints.join(", ") || "none"}).`,
      );
    }
    out.set(g.name, {
      name: g.name,
      host: g.host,
      entryPoint,
      queue: g.host.queue.withName(info.queue),
      title: g.title,
      description:
        g.description ?? `Run the "${g.host.graph.name}" graph; the arguments are its start state.`,
      inputSchema: startStateSchema(g.host),
    });
  });
  return out;
}
