import { z } from "zod";
import type { ExecContext } from "../context/exec-context.js";
import { ErrorCode, NervaError, parseOrThrow } from "../errors.js";
import type { Middleware } from "./types.js";

const OptionsSchema = z
  .object({
    /** Largest accepted message in UTF-8 bytes (default 32 KiB). */
    maxBytes: z
      .number()
      .int()
      .min(1)
      .default(32 * 1024),
  })
  .strict();
/** Options of {@link InputSizeLimitMiddleware}. */
export type InputSizeLimitOptions = z.input<typeof OptionsSchema>;

/**
 * Refuses messages larger than `maxBytes` (UTF-8) before routing, with NervaError INVALID_INPUT
 * (HTTP 400) giving the size and the limit. Nothing after it runs for such a message.
 *
 * @example
 * const orchestrator = new Orchestrator({ router, runtime, middleware: [new InputSizeLimitMiddleware({ maxBytes: 4096 })] });
 */
export class InputSizeLimitMiddleware implements Middleware {
  readonly name = "input-size-limit";
  readonly maxBytes: number;

  constructor(options: InputSizeLimitOptions = {}) {
    this.maxBytes = parseOrThrow(
      OptionsSchema,
      options,
      ErrorCode.INVALID_OPTIONS,
      "options",
      "Pass { maxBytes: a whole number >= 1 }.",
    ).maxBytes;
  }

  beforeRoute(message: string, ctx: ExecContext): string {
    // Cheap bound first: a UTF-8 string takes between length and 3 × length bytes.
    if (message.length * 3 <= this.maxBytes) return message;
    const bytes = Buffer.byteLength(message, "utf8");
    if (bytes <= this.maxBytes) return message;
    ctx.event("input.too_large", { bytes, limit: this.maxBytes });
    throw new NervaError(
      ErrorCode.INVALID_INPUT,
      `Invalid message: it is ${bytes} bytes, over the limit of ${this.maxBytes}. Send a shorter message.`,
      {
        issues: [{ path: "message", message: `must be at most ${this.maxBytes} bytes` }],
        details: { bytes, limit: this.maxBytes },
      },
    );
  }
}
