// Public entry of @nerva/core/tools: the ToolManager interface, function tools and composing
// managers. MCP servers as tools are at @nerva/core/mcp.
export {
  ToolStatus,
  type JsonSchema,
  type ToolInfo,
  type ToolManager,
  type ToolResult,
} from "./types.js";
export {
  FunctionToolManager,
  defineTool,
  type FunctionTool,
  type FunctionToolManagerOptions,
  type ToolCallContext,
} from "./function-tool-manager.js";
export { CompositeToolManager } from "./composite-tool-manager.js";
