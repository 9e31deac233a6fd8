// Public entry of @nerva/fastify: the Fastify 5 bridge.

// Plugin, error answers, request.nervaCtx typing
export { nervaPlugin, replyNervaError, type NervaFastifyOptions } from "./plugin.js";

// Streaming
export { sendSSE } from "./sse.js";

// Chat routes of a useChat frontend (@nerva/core/ui-stream)
export { nervaChat } from "./chat.js";

// The AG-UI route of an agent UI (@nerva/core/ag-ui)
export { nervaAgUi } from "./ag-ui.js";
