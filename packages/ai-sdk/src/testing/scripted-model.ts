import type {
  LanguageModelV3,
  LanguageModelV3CallOptions,
  LanguageModelV3Content,
  LanguageModelV3GenerateResult,
  LanguageModelV3Prompt,
  LanguageModelV3StreamPart,
  LanguageModelV3Usage,
} from "@ai-sdk/provider";

/**
 * One rule of a {@link scriptedModel}: when the user's last message matches `when`, answer
 * `reply`, or call `tool` (if the call offers it) and word the answer from its result.
 *
 * @example
 * const rule: ScriptRule = { when: /weather/i, tool: { name: "get_weather", args: () => ({ city: "Oslo" }) } };
 */
export interface ScriptRule {
  readonly when: RegExp | ((message: string) => boolean);
  readonly reply?: string | ((message: string) => string);
  readonly tool?: {
    readonly name: string;
    readonly args: (message: string) => unknown;
    /** Words the answer from the tool's result; default "Here is what I found: …". */
    readonly answer?: (result: unknown, message: string) => string;
  };
}

/**
 * Options of {@link scriptedModel}.
 *
 * @example
 * const options: ScriptedModelOptions = { rules: [{ when: /hello/i, reply: "Hi!" }], chunkDelaySeconds: 0.02 };
 */
export interface ScriptedModelOptions {
  /** Tried in order; default: flight questions call `search_flights`. */
  readonly rules?: readonly ScriptRule[];
  /** The answer when no rule matches. */
  readonly fallback?: (message: string) => string;
  readonly modelId?: string;
  /** Seconds between streamed words (0: as fast as the reader takes them). */
  readonly chunkDelaySeconds?: number;
}

/**
 * The default rules: flight questions search flights (the example apps' tool).
 *
 * @example
 * const model = scriptedModel({ rules: [...FLIGHT_RULES, { when: /hello/i, reply: "Hi!" }] });
 */
export const FLIGHT_RULES: readonly ScriptRule[] = Object.freeze([
  {
    when: /\b(flights?|fly|plane)\b/i,
    tool: {
      name: "search_flights",
      args: (message: string) => ({ to: /\bto ([A-Z][\w-]*)/.exec(message)?.[1] ?? "Berlin" }),
      answer: (result: unknown) =>
        Array.isArray(result)
          ? `I found ${result.length} flights: ${result.join("; ")}. Shall I book one?`
          : `The flight search answered: ${JSON.stringify(result)}.`,
    },
  },
]);

function lastUser(prompt: LanguageModelV3Prompt): string {
  for (let i = prompt.length - 1; i >= 0; i--) {
    const m = prompt[i]!;
    if (m.role === "user") {
      return m.content.map((p) => (p.type === "text" ? p.text : "")).join("");
    }
  }
  return "";
}

function chars(prompt: LanguageModelV3Prompt): number {
  let n = 0;
  for (const m of prompt) {
    if (typeof m.content === "string") n += m.content.length;
    else
      for (const p of m.content) n += p.type === "text" ? p.text.length : JSON.stringify(p).length;
  }
  return n;
}

function usageOf(promptChars: number, outputChars: number): LanguageModelV3Usage {
  const input = Math.ceil(promptChars / 4);
  const output = Math.ceil(outputChars / 4);
  return {
    inputTokens: { total: input, noCache: input, cacheRead: 0, cacheWrite: 0 },
    outputTokens: { total: output, text: output, reasoning: 0 },
  };
}

const matches = (rule: ScriptRule, message: string): boolean =>
  typeof rule.when === "function" ? rule.when(message) : rule.when.test(message);

/**
 * A deterministic `LanguageModelV3` that answers by rules, for tests, demos and CI without an API
 * key: it calls a rule's tool when the call offers it, words the answer from the tool's result,
 * streams word by word (honouring the abort signal), and reports usage (characters / 4).
 *
 * @example
 * const model = createModel(scriptedModel({ rules: [{ when: /hello/i, reply: "Hi there!" }] }));
 * const { text } = await model.generate({ prompt: "hello" }, ctx); // "Hi there!"
 */
export function scriptedModel(options: ScriptedModelOptions = {}): LanguageModelV3 {
  const rules = options.rules ?? FLIGHT_RULES;
  const fallback =
    options.fallback ??
    ((message: string) => `I am a scripted model (no API key is set). You said: ${message}`);
  const delayMs = (options.chunkDelaySeconds ?? 0) * 1000;

  const answer = (params: LanguageModelV3CallOptions): LanguageModelV3Content[] => {
    const message = lastUser(params.prompt);
    const last = params.prompt[params.prompt.length - 1];
    if (last?.role === "tool") {
      const result = last.content.find((p) => p.type === "tool-result");
      const rule = rules.find((r) => r.tool !== undefined && r.tool.name === result?.toolName);
      const output = result?.output as { type?: string; value?: unknown } | undefined;
      const value = output?.value;
      const text =
        rule?.tool?.answer?.(value, message) ?? `Here is what I found: ${JSON.stringify(value)}.`;
      return [{ type: "text", text }];
    }
    const offered = new Set((params.tools ?? []).map((t) => t.name));
    for (const rule of rules) {
      if (!matches(rule, message)) continue;
      if (rule.tool !== undefined && offered.has(rule.tool.name)) {
        return [
          {
            type: "tool-call",
            toolCallId: `call_${rule.tool.name}_${params.prompt.length}`,
            toolName: rule.tool.name,
            input: JSON.stringify(rule.tool.args(message)),
          },
        ];
      }
      if (rule.reply !== undefined) {
        return [
          { type: "text", text: typeof rule.reply === "string" ? rule.reply : rule.reply(message) },
        ];
      }
    }
    return [{ type: "text", text: fallback(message) }];
  };

  const generate = async (
    params: LanguageModelV3CallOptions,
  ): Promise<LanguageModelV3GenerateResult> => {
    const content = answer(params);
    const out = content.reduce(
      (n, c) =>
        n + (c.type === "text" ? c.text.length : c.type === "tool-call" ? c.input.length : 0),
      0,
    );
    const toolCall = content.some((c) => c.type === "tool-call");
    return {
      content,
      finishReason: toolCall
        ? { unified: "tool-calls", raw: "tool_calls" }
        : { unified: "stop", raw: "stop" },
      usage: usageOf(chars(params.prompt), out),
      warnings: [],
      response: {
        id: `scripted-${params.prompt.length}`,
        modelId: options.modelId ?? "scripted-1",
      },
    };
  };

  return {
    specificationVersion: "v3",
    provider: "nerva.scripted",
    modelId: options.modelId ?? "scripted-1",
    supportedUrls: {},
    doGenerate: generate,
    doStream: async (params) => {
      const result = await generate(params);
      const signal = params.abortSignal;
      const parts: LanguageModelV3StreamPart[] = [{ type: "stream-start", warnings: [] }];
      for (const c of result.content) {
        if (c.type === "text") {
          parts.push({ type: "text-start", id: "t" });
          for (const word of c.text.match(/\S+\s*|\s+/g) ?? [])
            parts.push({ type: "text-delta", id: "t", delta: word });
          parts.push({ type: "text-end", id: "t" });
        } else if (c.type === "tool-call") {
          parts.push(c);
        }
      }
      parts.push({ type: "finish", finishReason: result.finishReason, usage: result.usage });
      let i = 0;
      let timer: ReturnType<typeof setTimeout> | undefined;
      return {
        stream: new ReadableStream<LanguageModelV3StreamPart>({
          async pull(controller) {
            if (signal?.aborted) {
              controller.error(signal.reason);
              return;
            }
            const part = parts[i++];
            if (part === undefined) {
              controller.close();
              return;
            }
            if (delayMs > 0 && part.type === "text-delta") {
              await new Promise<void>((resolve) => {
                const done = (): void => {
                  clearTimeout(timer);
                  signal?.removeEventListener("abort", done);
                  resolve();
                };
                timer = setTimeout(done, delayMs);
                signal?.addEventListener("abort", done, { once: true });
              });
              if (signal?.aborted) {
                controller.error(signal.reason);
                return;
              }
            }
            controller.enqueue(part);
          },
          cancel() {
            clearTimeout(timer);
          },
        }),
      };
    },
  };
}
