import { z } from "zod";
import type { ExecContext } from "../context/exec-context.js";
import { ErrorCode, NervaError, parseOrThrow } from "../errors.js";
import { checkContext } from "../runtime/guard.js";
import type { AgentResult } from "../types/agent.js";
import { clientData, clientError, failureText } from "./failure-text.js";
import { withFailure } from "./passthrough-responder.js";
import { PlainTextStripper, stripMarkdown } from "./plain-text.js";
import { endsInsideFence, truncate } from "./truncate.js";
import type { Channel, ChannelSpec, FormattedResponse, Responder } from "./types.js";

/**
 * The shortest allowed channel `maxLength`: room for some text and the truncation marker.
 *
 * @example
 * const sms = { format: "plain", maxLength: Math.max(MIN_MAX_LENGTH, 160) } as const;
 */
export const MIN_MAX_LENGTH = 80;
const MARKER_ROOM = 60;

const ChannelSpecSchema = z
  .object({
    format: z.enum(["plain", "markdown"]),
    maxLength: z.number().int().min(MIN_MAX_LENGTH).nullable().optional(),
  })
  .strict();

const OptionsSchema = z
  .object({
    channels: z
      .record(
        z
          .string()
          .regex(
            /^[A-Za-z0-9_.:-]{1,64}$/,
            "channel names are 1-64 letters, digits, '_', '.', ':' or '-'",
          ),
        ChannelSpecSchema,
      )
      .default({}),
    truncationMarker: z
      .string()
      .min(1)
      .max(MARKER_ROOM - 10)
      .refine((s) => s.includes("{omitted}"), "must contain {omitted}")
      .default(" … [truncated: {omitted} more characters]"),
    streamTruncationMarker: z
      .string()
      .min(1)
      .max(MARKER_ROOM)
      .default(" … [truncated: the reply exceeded {limit} characters]"),
    failureText: z
      .custom<(result: AgentResult) => string | null>(
        (v) => typeof v === "function",
        "must be a function",
      )
      .optional(),
  })
  .strict();

/**
 * Options of {@link ChannelResponder}:
 * - `channels`: named channels besides the built-in `plain` and `markdown` (which have no length
 *   limit), e.g. `{ sms: { format: "plain", maxLength: 160 } }`; `maxLength` is at least 80;
 * - `truncationMarker`: appended when `format` shortens a text; `{omitted}` becomes the number
 *   of characters left out (default `" … [truncated: {omitted} more characters]"`);
 * - `streamTruncationMarker`: appended when a stream is cut; `{limit}` becomes the channel's
 *   `maxLength` (default `" … [truncated: the reply exceeded {limit} characters]"`);
 * - `failureText`: the line shown for a non-success result (default {@link failureText}:
 *   `Error: the agent failed.`, `Timed out: ...`; never the result's operator text, see
 *   {@link clientError}). Return `null` only when the output already explains it.
 *
 * @example
 * const options: ChannelResponderOptions = { channels: { sms: { format: "plain", maxLength: 160 } } };
 */
export type ChannelResponderOptions = z.input<typeof OptionsSchema>;

interface Resolved {
  readonly key: string;
  readonly label: string;
  readonly spec: Required<ChannelSpec>;
}

interface StreamState {
  readonly stripper: PlainTextStripper | null;
  /** Characters sent so far. */
  emitted: number;
  /** Formatted text kept back near the limit, until we know whether the stream ends in time. */
  held: string;
  /** Everything sent so far, for fence tracking in markdown (only kept when there is a limit). */
  sent: string;
  truncated: boolean;
}

const BUILT_IN: Readonly<Record<string, Required<ChannelSpec>>> = Object.freeze({
  plain: Object.freeze({ format: "plain", maxLength: null }),
  markdown: Object.freeze({ format: "markdown", maxLength: null }),
});

/**
 * Formats for the channel a reply goes to: `plain` strips markdown (headings, emphasis, code
 * fences, links become `text (url)`), `markdown` keeps it, and a channel's `maxLength` caps the
 * text with a visible marker saying how much was cut — never a silent cut. In markdown, an open
 * code fence is closed before the marker.
 *
 * Failures stay visible: a non-success result's text ends with a line naming the failure, and
 * that line survives truncation (the output is shortened first).
 *
 * Streams: `formatChunk` strips markdown as chunks arrive (holding back at most the current line
 * while a construct is undecided) and enforces `maxLength` over the whole stream; call
 * `endStream(channel, ctx)` after the last chunk to flush what was held back. State is kept per
 * `ctx` and channel, so format one stream's chunks with the same ctx object.
 *
 * @example
 * const responder = new ChannelResponder({ channels: { sms: { format: "plain", maxLength: 160 } } });
 * const response = await responder.format(result, "sms", ctx);
 * // response.text: plain text, at most 160 characters; response.truncated says whether it was cut
 */
export class ChannelResponder implements Responder {
  readonly #channels: Readonly<Record<string, Required<ChannelSpec>>>;
  readonly #marker: string;
  readonly #streamMarker: string;
  readonly #failureText: (result: AgentResult) => string | null;
  readonly #streams = new WeakMap<ExecContext, Map<string, StreamState>>();

  constructor(options: ChannelResponderOptions = {}) {
    const o = parseOrThrow(
      OptionsSchema,
      options,
      ErrorCode.INVALID_OPTIONS,
      "options",
      'Pass { channels?: { name: { format: "plain" | "markdown", maxLength?: integer >= 80 } }, truncationMarker?: "... {omitted} ...", streamTruncationMarker?, failureText? }.',
    );
    const channels: Record<string, Required<ChannelSpec>> = { ...BUILT_IN };
    for (const [name, spec] of Object.entries(o.channels)) {
      channels[name] = Object.freeze({ format: spec.format, maxLength: spec.maxLength ?? null });
    }
    this.#channels = Object.freeze(channels);
    this.#marker = o.truncationMarker;
    this.#streamMarker = o.streamTruncationMarker;
    this.#failureText = o.failureText ?? failureText;
  }

  /** Names of the channels this responder knows. */
  channelNames(): readonly string[] {
    return Object.keys(this.#channels);
  }

  #resolve(channel: Channel): Resolved {
    if (typeof channel === "string") {
      const spec = this.#channels[channel];
      if (spec === undefined) {
        throw new NervaError(
          ErrorCode.INVALID_INPUT,
          `Invalid channel: "${channel}" is not configured (known: ${this.channelNames().join(", ")}). Add it to ChannelResponder options.channels, or pass a { format, maxLength } spec.`,
          { issues: [{ path: "channel", message: "unknown channel" }] },
        );
      }
      return { key: channel, label: channel, spec };
    }
    const spec = parseOrThrow(
      ChannelSpecSchema,
      channel,
      ErrorCode.INVALID_INPUT,
      "channel",
      `Pass a channel name or { format: "plain" | "markdown", maxLength?: integer >= ${MIN_MAX_LENGTH} }.`,
    );
    const maxLength = spec.maxLength ?? null;
    return {
      key: `{${spec.format}:${maxLength}}`,
      label: spec.format,
      spec: { format: spec.format, maxLength },
    };
  }

  #omittedMarker = (omitted: number): string =>
    this.#marker.replaceAll("{omitted}", String(omitted));

  async format(
    result: AgentResult,
    channel: Channel,
    ctx: ExecContext,
  ): Promise<FormattedResponse> {
    checkContext(ctx);
    const { label, spec } = this.#resolve(channel);
    const { text, truncated } = this.#render(result, spec, label, ctx);
    return Object.freeze({
      text,
      status: result.status,
      handler: result.handler,
      data: clientData(result.data),
      error: clientError(result),
      truncated,
    });
  }

  #render(
    result: AgentResult,
    spec: Required<ChannelSpec>,
    label: string,
    ctx: ExecContext,
  ): { text: string; truncated: boolean } {
    const markdown = spec.format === "markdown";
    const output = markdown ? result.output : stripMarkdown(result.output);
    // Judge the failure on what the user will see: output that was only markup counts as empty.
    const failure = this.#failureText(output === result.output ? result : { ...result, output });
    let text = withFailure(output, failure);
    let truncated = false;
    const max = spec.maxLength;
    if (max !== null && text.length > max) {
      truncated = true;
      if (failure === null) {
        text = truncate(output, max, this.#omittedMarker, markdown).text;
      } else {
        text = this.#fitWithFailure(output, failure, max, markdown);
      }
      ctx.event("responder.truncated", {
        channel: label,
        max_length: max,
        length: withFailure(output, failure).length,
      });
    }
    return { text, truncated };
  }

  /**
   * Fits output plus failure line into `max`. The failure line has priority: the output may
   * shrink down to its truncation marker (which still says how much was left out); only if the
   * failure line alone is too long is it shortened, ending in "…".
   */
  #fitWithFailure(output: string, failure: string, max: number, markdown: boolean): string {
    const sep = output === "" ? 0 : 2;
    const outputFloor =
      output === "" ? 0 : Math.min(output.length, this.#omittedMarker(output.length).length);
    let shown = failure;
    const failureRoom = max - sep - outputFloor;
    if (failure.length > failureRoom) {
      let cut = Math.max(0, failureRoom - 1);
      const code = failure.charCodeAt(cut - 1);
      if (cut > 0 && code >= 0xd800 && code <= 0xdbff) cut--;
      shown = `${failure.slice(0, cut)}…`;
    }
    if (output === "") return shown;
    const kept = truncate(output, max - sep - shown.length, this.#omittedMarker, markdown).text;
    return withFailure(kept, shown);
  }

  #state(ctx: ExecContext, resolved: Resolved): StreamState {
    let byChannel = this.#streams.get(ctx);
    if (byChannel === undefined) this.#streams.set(ctx, (byChannel = new Map()));
    let state = byChannel.get(resolved.key);
    if (state === undefined) {
      state = {
        stripper: resolved.spec.format === "plain" ? new PlainTextStripper() : null,
        emitted: 0,
        held: "",
        sent: "",
        truncated: false,
      };
      byChannel.set(resolved.key, state);
    }
    return state;
  }

  formatChunk(chunk: string, channel: Channel, ctx: ExecContext): string {
    const resolved = this.#resolve(channel);
    const state = this.#state(ctx, resolved);
    if (state.truncated) return "";
    const text = state.stripper === null ? chunk : state.stripper.push(chunk);
    return this.#limit(state, text, resolved, ctx, false);
  }

  endStream(channel: Channel, ctx: ExecContext): string {
    const resolved = this.#resolve(channel);
    const byChannel = this.#streams.get(ctx);
    const state = byChannel?.get(resolved.key);
    if (state === undefined) return "";
    byChannel?.delete(resolved.key);
    if (byChannel?.size === 0) this.#streams.delete(ctx);
    if (state.truncated) return "";
    const rest = state.stripper === null ? "" : state.stripper.end();
    return this.#limit(state, rest, resolved, ctx, true);
  }

  /** Applies the channel's maxLength to the next piece of a stream. */
  #limit(
    state: StreamState,
    text: string,
    resolved: Resolved,
    ctx: ExecContext,
    final: boolean,
  ): string {
    const max = resolved.spec.maxLength;
    if (max === null) return text;
    const marker = this.#streamMarker.replaceAll("{limit}", String(max));
    const markdown = resolved.spec.format === "markdown";
    const reserve = marker.length + (markdown ? 4 : 0);
    const pending = state.held + text;
    const total = state.emitted + pending.length;
    if (total <= max && (final || total <= max - reserve)) {
      // Fits, with room for a marker should the stream go on: send all of it.
      state.held = "";
      return this.#send(state, pending, markdown);
    }
    if (total <= max) {
      // Fits for now, but might not leave room for a marker: keep the tail until we know.
      const free = Math.max(0, max - reserve - state.emitted);
      state.held = pending.slice(free);
      return this.#send(state, pending.slice(0, free), markdown);
    }
    // Too long: send what fits before the marker, then the marker, then nothing more.
    state.truncated = true;
    state.held = "";
    let room = Math.max(0, max - reserve - state.emitted);
    if (room > 0 && room < pending.length) {
      const code = pending.charCodeAt(room - 1);
      if (code >= 0xd800 && code <= 0xdbff) room--;
    }
    const kept = pending.slice(0, room);
    const close = markdown && endsInsideFence(state.sent + kept) ? "\n```" : "";
    ctx.event("responder.truncated", { channel: resolved.label, max_length: max, stream: true });
    return this.#send(state, kept, markdown) + close + marker;
  }

  #send(state: StreamState, text: string, markdown: boolean): string {
    state.emitted += text.length;
    if (markdown) state.sent += text;
    return text;
  }
}
