import type { ExecContext } from "../context/exec-context.js";
import type { AgentResult, JsonValue } from "../types/agent.js";
import type { AgentStatus } from "../types/status.js";

/**
 * How a channel renders text: `plain` strips markdown, `markdown` keeps it. `maxLength` (in
 * UTF-16 code units, the unit of `string.length`) caps the text, marker included; `null` or
 * omitted means no limit.
 *
 * @example
 * const sms: ChannelSpec = { format: "plain", maxLength: 160 };
 */
export interface ChannelSpec {
  readonly format: "plain" | "markdown";
  readonly maxLength?: number | null;
}

/**
 * Where a response goes: a channel name the responder knows (`"plain"`, `"markdown"`, or one
 * configured on the responder, e.g. `"sms"`), or an inline {@link ChannelSpec}.
 *
 * @example
 * await responder.format(result, "sms", ctx);
 * await responder.format(result, { format: "plain", maxLength: 280 }, ctx);
 */
export type Channel = string | ChannelSpec;

/**
 * A result ready to send. Keeps the agent's `status`, `handler`, `data` and `error`, so callers
 * can branch on them; `text` is what the user sees (for a failure, it names the failure).
 *
 * @example
 * const response = await responder.format(result, "markdown", ctx);
 * res.status(response.status === "success" ? 200 : 502).send(response.text);
 */
export interface FormattedResponse {
  readonly text: string;
  readonly status: AgentStatus;
  readonly handler: string;
  readonly data: Readonly<Record<string, JsonValue>>;
  readonly error: string | null;
  /** True when `text` was shortened to the channel's `maxLength` (the text says so, too). */
  readonly truncated: boolean;
}

/**
 * Turns agent results and streamed chunks into what a channel can show.
 *
 * - `format`: a non-success result never formats to an empty or misleading text: the failure is
 *   visible in `text`, and `status`/`error` are kept. The orchestrator opens the
 *   `responder.format` span and calls `format` with a context whose spans nest under it.
 * - `formatChunk` formats one streamed chunk. All chunks of one stream are formatted with the same
 *   `ctx` (responders may keep per-stream state keyed by it, e.g. characters sent so far). It is
 *   synchronous and cheap: no span per chunk.
 * - `endStream`, when present, must be called once after the last chunk of a stream; it returns
 *   text the responder held back (e.g. a half-received markdown token), possibly `""`, and frees
 *   the per-stream state.
 *
 * @example
 * const response = await responder.format(result, "plain", ctx);
 * for await (const chunk of chunks) sink.push(responder.formatChunk(chunk, "plain", ctx));
 * sink.push(responder.endStream?.("plain", ctx) ?? "");
 */
export interface Responder {
  /**
   * Set to `true` when `format` opens no span, records no event and starts no work of its own: the
   * orchestrator then calls it with the request's context instead of a fork under its
   * `responder.format` span (the trace is the same either way; the fork costs a few hundred ns per
   * request). Leave it unset if unsure. Built-in implementations that qualify set it, and any
   * implementation may.
   */
  readonly spanless?: boolean;
  format(result: AgentResult, channel: Channel, ctx: ExecContext): Promise<FormattedResponse>;
  formatChunk(chunk: string, channel: Channel, ctx: ExecContext): string;
  endStream?(channel: Channel, ctx: ExecContext): string;
}
