import { z } from "zod/v4";
import {
  agentResult,
  AgentStatus,
  ErrorCode,
  ExecContext,
  isNervaError,
  parseOrThrow,
  type AgentResult,
} from "@nerva/core";
import {
  PassthroughResponder,
  type Channel,
  type FormattedResponse,
  type Responder,
} from "@nerva/core/responder";
import { safeText } from "./errors.js";
import type { NervaModel } from "./types.js";

/**
 * Options of {@link ModelResponder}.
 *
 * @example
 * const options: ModelResponderOptions = { model, instructions: "Warm, brief.", timeoutSeconds: 5 };
 */
export interface ModelResponderOptions {
  readonly model: NervaModel;
  /** How to rewrite answers (tone, length, language). */
  readonly instructions: string;
  /** Formats the rewritten (or, on failure, the original) answer for the channel; default passthrough. */
  readonly inner?: Responder;
  /** The rewrite's own time limit, never past the request's deadline; default none of its own. */
  readonly timeoutSeconds?: number;
  readonly maxOutputTokens?: number;
}

const OptionsSchema = z
  .object({
    model: z.custom<NervaModel>(
      (v) =>
        typeof v === "object" && v !== null && typeof (v as NervaModel).generate === "function",
      "must be a model made by createModel(...)",
    ),
    instructions: z.string().min(1),
    inner: z
      .custom<Responder>(
        (v) =>
          typeof v === "object" &&
          v !== null &&
          typeof (v as Responder).format === "function" &&
          typeof (v as Responder).formatChunk === "function",
        "must be a Responder",
      )
      .optional(),
    timeoutSeconds: z.number().positive().finite().optional(),
    maxOutputTokens: z.number().int().positive().optional(),
  })
  .strict();

/** Set once chunks of this request were formatted: its answer already reached the user as produced. */
const kStreamed = ExecContext.key<boolean>("nerva.ai-sdk.responder-streamed");

function channelHint(channel: Channel): string {
  const spec = typeof channel === "string" ? null : channel;
  const name = typeof channel === "string" ? channel : spec?.format;
  const limit = spec?.maxLength == null ? "" : ` Keep it under ${spec.maxLength} characters.`;
  return name === "plain" || name === "sms"
    ? `Write plain text, no markdown.${limit}`
    : `Markdown is fine.${limit}`;
}

/**
 * A responder that rewrites successful answers with a model (tone, brevity, language), within
 * the request's deadline, then formats them with `inner` for the channel. If the model fails,
 * the plain answer is sent and a `responder.model_failed` event says why; failures, empty
 * answers and streamed answers (already sent as produced) are not rewritten. `formatChunk`
 * passes chunks through (to `inner`).
 *
 * @example
 * new Orchestrator({ router, runtime, responder: new ModelResponder({ model, instructions: "Warm, brief." }) });
 */
export class ModelResponder implements Responder {
  readonly #model: NervaModel;
  readonly #instructions: string;
  readonly #inner: Responder;
  readonly #timeoutSeconds: number | undefined;
  readonly #maxOutputTokens: number | undefined;

  constructor(options: ModelResponderOptions) {
    const o = parseOrThrow(
      OptionsSchema,
      options,
      ErrorCode.INVALID_OPTIONS,
      "options",
      'Pass { model: createModel(...), instructions: "how to rewrite", inner?: Responder, timeoutSeconds?, maxOutputTokens? }.',
    );
    this.#model = o.model;
    this.#instructions = o.instructions;
    this.#inner = o.inner ?? new PassthroughResponder();
    this.#timeoutSeconds = o.timeoutSeconds;
    this.#maxOutputTokens = o.maxOutputTokens;
  }

  async format(
    result: AgentResult,
    channel: Channel,
    ctx: ExecContext,
  ): Promise<FormattedResponse> {
    if (
      result.status !== AgentStatus.SUCCESS ||
      result.output === "" ||
      ctx.local(kStreamed) === true
    ) {
      return this.#inner.format(result, channel, ctx);
    }
    const span = ctx.startSpan("responder.format", { responder: "model" });
    const scoped = ctx.fork({
      span,
      ...(this.#timeoutSeconds === undefined ? {} : { timeoutSeconds: this.#timeoutSeconds }),
    });
    let output = result.output;
    try {
      const { text } = await this.#model.generate(
        {
          system: `Rewrite the assistant's answer below for the user. ${this.#instructions} ${channelHint(channel)} Keep every fact, number and name; add nothing. Reply with the rewritten answer only.`,
          prompt: result.output,
          ...(this.#maxOutputTokens === undefined
            ? {}
            : { maxOutputTokens: this.#maxOutputTokens }),
        },
        scoped,
      );
      if (text.trim() !== "") output = text;
      span.end("ok");
    } catch (err) {
      const code = isNervaError(err) ? err.code : "INTERNAL";
      const message = safeText(err instanceof Error ? err.message : String(err));
      ctx.event("responder.model_failed", { model: this.#model.id, code, error: message });
      span.end("error", message);
    } finally {
      scoped.dispose();
    }
    const rewritten =
      output === result.output
        ? result
        : agentResult(result.handler, {
            status: result.status,
            output,
            data: result.data,
            error: result.error,
          });
    return this.#inner.format(rewritten, channel, ctx);
  }

  formatChunk(chunk: string, channel: Channel, ctx: ExecContext): string {
    if (ctx.local(kStreamed) !== true) ctx.setLocal(kStreamed, true);
    return this.#inner.formatChunk(chunk, channel, ctx);
  }

  endStream(channel: Channel, ctx: ExecContext): string {
    return this.#inner.endStream?.(channel, ctx) ?? "";
  }
}
