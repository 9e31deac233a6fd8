// What the example apps serve to frontends and other agents, whatever the framework: the AI SDK
// UI message stream (`useChat`), AG-UI (`HttpAgent`) and an MCP server. The first two start the
// answer as a durable run of RUN_HANDLER on the service's runs queue (the orchestrator's whole
// request, streamed into the run's event log), so a reader may leave and come back on any replica.
import type { Orchestrator, RunQueue } from "@nerva/core";
import { createAgUiRoute, type AgUiRoute } from "@nerva/core/ag-ui";
import { createMcpHandler, type McpAgentTool, type McpHandler } from "@nerva/core/mcp-server";
import { createChatRoutes, type ChatRoutes } from "@nerva/core/ui-stream";

/**
 * The handler of the service's durable runs (`POST /runs`, `/api/chat`, `/ag-ui`): it sends the
 * run's message through the orchestrator.
 *
 * @example
 * await runs.enqueue({ handler: RUN_HANDLER, input: { message: "count to 3" }, ctx });
 */
export const RUN_HANDLER = "chat_run";

/**
 * The agents the example apps serve as MCP tools: a call is a whole orchestrator request with the
 * agent named (policy, memory and usage apply as on `/chat`).
 *
 * @example
 * const mcp = createMcpHandler({ orchestrator, agents: [...MCP_AGENTS] });
 */
export const MCP_AGENTS: readonly McpAgentTool[] = Object.freeze([
  { name: "flight_agent", description: 'Finds flights to a city: "Find me a flight to Lisbon".' },
  { name: "echo_agent", description: "Answers with the message, addressed to the caller." },
  { name: "concierge_agent", description: "The travel agency's concierge (a model)." },
]);

/**
 * The protocol endpoints of an example app (see {@link createExampleProtocols}), mounted by each
 * framework's bridge behind the app's JWT auth.
 *
 * @example
 * app.use(nervaChat(protocols.chat), nervaAgUi(protocols.agUi));
 * app.all("/mcp", (req, res, next) => protocols.mcp.handle(req, res, req.nervaCtx, req.body).catch(next));
 */
export interface ExampleProtocols {
  /** `POST /api/chat`, `GET /api/chat/:id/stream`, `POST /api/chat/:id/stop`. */
  readonly chat: ChatRoutes;
  /** `POST /ag-ui`. */
  readonly agUi: AgUiRoute;
  /** `/mcp` (POST, GET and DELETE: the Streamable HTTP transport). */
  readonly mcp: McpHandler;
  /** Closes the MCP sessions open on this replica. */
  close(): Promise<void>;
}

/**
 * The protocol endpoints over the service's runs queue and orchestrator. `/api/chat` and `/ag-ui`
 * enqueue a run of {@link RUN_HANDLER} (a Runner on `runs` executes it) and stream its events;
 * the earlier turns of a conversation come from the orchestrator's memory (`history: "memory"`),
 * which keeps every turn of the session as `/chat` does. `/mcp` serves {@link MCP_AGENTS}.
 *
 * @example
 * const protocols = createExampleProtocols({ orchestrator, runs: backend.queue("runs") });
 */
export function createExampleProtocols(deps: {
  orchestrator: Orchestrator;
  runs: RunQueue;
  /** Default {@link MCP_AGENTS}. */
  agents?: readonly (string | McpAgentTool)[];
}): ExampleProtocols {
  const mcp = createMcpHandler({
    orchestrator: deps.orchestrator,
    agents: [...(deps.agents ?? MCP_AGENTS)],
    serverName: "nerva-example",
  });
  return {
    chat: createChatRoutes({ queue: deps.runs, handler: RUN_HANDLER, history: "memory" }),
    agUi: createAgUiRoute({ queue: deps.runs, handler: RUN_HANDLER, history: "memory" }),
    mcp,
    close: () => mcp.close(),
  };
}
