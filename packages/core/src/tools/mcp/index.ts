// Entry point of `@nerva/core/mcp`: MCP tools, kept apart so that `@nerva/core` users who do not
// use MCP never load (or need) `@modelcontextprotocol/sdk`.
export {
  McpToolManager,
  type McpNotification,
  type McpToolManagerOptions,
} from "./mcp-tool-manager.js";
