// Public entry of @nerva/core/responder: turning an agent's result into what a channel shows.
export type { Channel, ChannelSpec, FormattedResponse, Responder } from "./types.js";
export { PassthroughResponder } from "./passthrough-responder.js";
export {
  ChannelResponder,
  MIN_MAX_LENGTH,
  type ChannelResponderOptions,
} from "./channel-responder.js";
export { clientData, clientError, failureText } from "./failure-text.js";
export { stripMarkdown } from "./plain-text.js";
