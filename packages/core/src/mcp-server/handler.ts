import { randomUUID } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import type { ExecContext } from "../context/exec-context.js";
import { importOptional } from "../internal/optional-dependency.js";
import {
  parseMcpHandlerOptions,
  type McpHandlerConfig,
  type McpHandlerOptions,
} from "./options.js";
import { TASK_POLL_MS, runTaskStore } from "./tasks.js";
import { CTX_KEY, installAgentTools } from "./tools.js";

const SDK = "@modelcontextprotocol/sdk";
const FEATURE = "createMcpHandler";
type ServerModule = typeof import("@modelcontextprotocol/sdk/server/index.js");
type HttpModule = typeof import("@modelcontextprotocol/sdk/server/streamableHttp.js");
type TypesModule = typeof import("@modelcontextprotocol/sdk/types.js");
interface Sdk {
  readonly server: ServerModule;
  readonly http: HttpModule;
  readonly types: TypesModule;
}

interface Session {
  readonly transport: StreamableHTTPServerTransport;
  /** The identity that opened the session: only it may use the session id. */
  readonly owner: string;
  /** Its user, who alone may read the session's tasks. */
  readonly userId: string | null;
}

/**
 * An MCP endpoint (Streamable HTTP) serving agents as tools. Mount it on any route that has the
 * request's ExecContext; see {@link createMcpHandler}.
 */
export interface McpHandler {
  /**
   * Answers one HTTP request of the MCP Streamable HTTP transport (POST, GET or DELETE) as the
   * identity of `ctx`. `body` is the parsed JSON body when a body parser already read it.
   */
  handle(
    req: IncomingMessage,
    res: ServerResponse,
    ctx: ExecContext,
    body?: unknown,
  ): Promise<void>;
  /** Closes every open session (their running calls are cancelled). */
  close(): Promise<void>;
}

function ownerOf(ctx: ExecContext): string {
  return JSON.stringify([ctx.userId ?? null]);
}

function refuse(res: ServerResponse, status: number, message: string): void {
  // The shape the SDK's own transport uses for its HTTP-level refusals.
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify({ jsonrpc: "2.0", error: { code: -32000, message }, id: null }));
}

/**
 * Creates an MCP server endpoint over Streamable HTTP that serves the chosen agents (and graphs,
 * which a client may also run as tasks that any replica reports on) as tools.
 * Each request runs as the caller of the app's own auth: `tools/list` shows only the agents that
 * `ctx.permissions.canUseAgent` allows, a call runs through the orchestrator (its policy applies)
 * or the runtime's delegation checks, streamed chunks become progress notifications when the
 * client asks for progress, and the client's cancellation cancels the run. Sessions are kept in
 * this process, bound to the user that opened them. Loads `@modelcontextprotocol/sdk` on the first
 * request (NervaError MISSING_DEPENDENCY when absent); bad options throw INVALID_OPTIONS at once.
 *
 * @example
 * const mcp = createMcpHandler({ orchestrator, agents: ["support"] });
 * app.all("/mcp", (req, res, next) => mcp.handle(req, res, req.nervaCtx, req.body).catch(next));
 */
export function createMcpHandler(options: McpHandlerOptions): McpHandler {
  const config = parseMcpHandlerOptions(options);
  // Insertion order is recency order: a used session is moved to the end.
  const sessions = new Map<string, Session>();
  let sdk: Promise<Sdk> | null = null;
  const load = (): Promise<Sdk> =>
    (sdk ??= Promise.all([
      importOptional(SDK, () => import(`${SDK}/server/index.js`) as Promise<ServerModule>, FEATURE),
      importOptional(
        SDK,
        () => import(`${SDK}/server/streamableHttp.js`) as Promise<HttpModule>,
        FEATURE,
      ),
      importOptional(SDK, () => import(`${SDK}/types.js`) as Promise<TypesModule>, FEATURE),
    ]).then(([server, http, types]) => ({ server, http, types })));
  load().catch(() => {
    // Reported (MISSING_DEPENDENCY) by the first handle(); a later one tries again.
    sdk = null;
  });

  return {
    async handle(req, res, ctx, body) {
      const header = req.headers["mcp-session-id"];
      const id = Array.isArray(header) ? header[0] : header;
      const owner = ownerOf(ctx);
      const s = await load();
      // The SDK hands `req.auth` to handlers as extra.authInfo: that carries this request's ctx.
      const auth = (req as { auth?: { extra?: Record<string, unknown> } }).auth;
      (req as { auth?: unknown }).auth = {
        token: "",
        clientId: ctx.userId ?? "",
        scopes: [],
        ...auth,
        extra: { ...auth?.extra, [CTX_KEY]: ctx },
      };
      if (id !== undefined) {
        const session = sessions.get(id);
        // Another user's session id reads as unknown: 404 tells the client to start a new session.
        if (session === undefined || session.owner !== owner) {
          return refuse(res, 404, "Session not found: start a new MCP session (initialize).");
        }
        sessions.delete(id);
        sessions.set(id, session);
        return session.transport.handleRequest(req, res, body);
      }
      return openSession(s, config, sessions, { owner, userId: ctx.userId }, req, res, body);
    },
    async close() {
      const open = [...sessions.values()];
      sessions.clear();
      await Promise.all(open.map((x) => x.transport.close()));
    },
  };
}

/** A request without a session id: the SDK accepts only `initialize` there, and opens one. */
async function openSession(
  s: Sdk,
  config: McpHandlerConfig,
  sessions: Map<string, Session>,
  who: { owner: string; userId: string | null },
  req: IncomingMessage,
  res: ServerResponse,
  body: unknown,
): Promise<void> {
  const tasks = config.graphs.size > 0;
  const server = new s.server.Server(
    { name: config.serverName, version: config.serverVersion },
    {
      capabilities: {
        tools: { listChanged: false },
        // Graph tools may run as tasks: each is its run, read from the run store.
        ...(tasks ? { tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } } } : {}),
      },
      ...(tasks
        ? {
            taskStore: runTaskStore([...config.graphs.values()], (sid) =>
              sid === undefined ? null : (sessions.get(sid)?.userId ?? null),
            ),
            defaultTaskPollInterval: TASK_POLL_MS,
          }
        : {}),
    },
  );
  installAgentTools(server, s.types, config);
  // Stateful mode: the client's notifications/cancelled is a separate POST and must reach the
  // same Server, whose protocol layer holds the abort controller of the request it cancels.
  const transport: StreamableHTTPServerTransport = new s.http.StreamableHTTPServerTransport({
    sessionIdGenerator: () => randomUUID(),
    onsessioninitialized: (sid) => {
      sessions.set(sid, { transport, ...who });
      for (const [old, session] of sessions) {
        if (sessions.size <= config.maxSessions) break;
        sessions.delete(old);
        void session.transport.close().catch(() => {});
      }
    },
  });
  transport.onclose = () => {
    if (transport.sessionId !== undefined) sessions.delete(transport.sessionId);
  };
  await server.connect(transport);
  await transport.handleRequest(req, res, body);
  // A request that did not initialise a session leaves nothing behind.
  if (transport.sessionId === undefined) await server.close();
}
