// Public entry of @nerva/fastify: the Fastify 5 bridge.

// Plugin, error answers, request.nervaCtx typing
export { nervaPlugin, replyNervaError, type NervaFastifyOptions } from "./plugin.js";

// Streaming
export { sendSSE } from "./sse.js";

// Shared HTTP helpers, re-exported so apps need one import
export {
  HttpErrorCode,
  HttpRequestError,
  httpStatusOf,
  httpStatusOfResult,
  jsonBodyOf,
  toHttpError,
  type JsonBodyRequest,
  type NervaHttpOptions,
  type NervaIdentity,
} from "@nerva/core/http";
