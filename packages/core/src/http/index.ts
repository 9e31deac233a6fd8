// Public entry of @nerva/core/http: what the framework bridges (@nerva/express, @nerva/fastify,
// @nerva/nestjs) share. Framework-agnostic: it sees Node's IncomingMessage/ServerResponse and the
// request object only through HttpRequestLike (headers + the user the app's auth set).

// Options
export {
  NervaHttpOptionsSchema,
  parseHttpOptions,
  type HttpErrorListener,
  type NervaHttpOptions,
  type NervaLogger,
  type ResolvedHttpOptions,
} from "./options.js";

// Identity
export {
  defaultResolve,
  resolveIdentity,
  type HttpRequestLike,
  type NervaIdentity,
  type ResolveIdentity,
  type ResolvedIdentity,
} from "./identity.js";

// Request lifecycle
export {
  HttpBridge,
  RequestScope,
  defineContextGetter,
  getRequestScope,
  setRequestScope,
} from "./bridge.js";

// Errors and results → HTTP
export {
  HTTP_STATUS_BY_AGENT_STATUS,
  httpStatusOf,
  httpStatusOfResult,
  toHttpError,
  type HttpErrorBody,
  type HttpErrorResponse,
} from "./status.js";

// Request bodies: the JSON check routes use, the errors of bodies refused
export { jsonBodyOf, type JsonBodyRequest } from "./json-body.js";
export { HttpErrorCode, HttpRequestError, requestErrorOf } from "./request-errors.js";

// Server-Sent Events: the one writer (ids, Last-Event-ID), its pull-based event source
export {
  createSSEEventSource,
  type SSEEventSource,
  type SSEEventSourceOptions,
  type SSEMessage,
  type SSEOutcome,
} from "./sse-event-source.js";
export { writeSSE, type SSEOptions } from "./sse.js";
export { lastEventSeq } from "./last-event-id.js";

// What a client may see of a run (a durable run or a graph's), its events and its errors
export {
  clientRun,
  clientRunError,
  clientRunEvent,
  type ClientRun,
  type ClientRunResult,
} from "./client-view.js";
// A plain request's answer as a run's events, for the protocol adapters (ui-stream, ag-ui)
export { answerEvents } from "./answer-events.js";
