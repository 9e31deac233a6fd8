// Entry point of `@nerva/core/mcp-server`: agents served as MCP tools over Streamable HTTP, kept
// apart so that `@nerva/core` users who do not serve MCP never load `@modelcontextprotocol/sdk`.
export { createMcpHandler, type McpHandler } from "./handler.js";
export type { McpAgentTool, McpHandlerOptions } from "./options.js";
export type { McpGraphTool } from "./graph-tools.js";
