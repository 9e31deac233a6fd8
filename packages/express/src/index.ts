// Public entry of @nerva/express: the Express 5 bridge.

// Middleware, error handler, req.nervaCtx typing
export {
  nervaErrorHandler,
  nervaMiddleware,
  nervaNotFound,
  type NervaExpressOptions,
} from "./middleware.js";

// Streaming
export { sendSSE } from "./sse.js";

// Chat routes of a useChat frontend (@nerva/core/ui-stream)
export { nervaChat } from "./chat.js";

// The AG-UI route of an agent UI (@nerva/core/ag-ui)
export { nervaAgUi } from "./ag-ui.js";
