// Public entry of @nerva/core/ui-stream: a run's events as the AI SDK UI message stream that
// `useChat` reads (JSON over SSE; the `ai` package is not needed), and the chat routes that start
// answers as durable runs and resume them from the run's event log.

// The adapter: events → chunks → SSE
export { UIChunker, type UIMessageChunk, type UIMessageMetadata } from "./chunks.js";
export {
  UI_MESSAGE_STREAM_HEADER,
  UI_STREAM_DONE,
  toUIMessageChunks,
  writeUIMessageStream,
  type UIChunksOptions,
  type UIStreamMessage,
} from "./stream.js";
// A plain request's answer in the same event shape
export { answerEvents } from "../http/answer-events.js";

// The chat routes (POST /api/chat, GET /api/chat/:id/stream, POST /api/chat/:id/stop)
export {
  CHAT_ID_ARG,
  activeRun,
  createChatRoutes,
  type ChatRoutes,
  type ChatRoutesOptions,
} from "./chat-routes.js";
export { ChatRequestSchema, parseChatRequest, type ChatTurn } from "./chat-body.js";
