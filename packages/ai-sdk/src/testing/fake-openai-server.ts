import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { ErrorCode, NervaError } from "@nerva/core";

/**
 * What the fake server answers to one request. Without `status`, a completion: `text` (streamed
 * as `chunks`, by default word by word), `toolCalls`, and `usage` (`null`: none reported). With
 * `status`, an error answer with `headers` (e.g. `retry-after`).
 *
 * @example
 * server.enqueue({ status: 429, headers: { "retry-after": "1" } }, { text: "Hello there" });
 */
export interface FakeReply {
  readonly text?: string;
  readonly chunks?: readonly string[];
  readonly toolCalls?: readonly {
    readonly id?: string;
    readonly name: string;
    readonly arguments: unknown;
  }[];
  readonly usage?: {
    readonly promptTokens: number;
    readonly completionTokens: number;
    readonly cachedTokens?: number;
    readonly reasoningTokens?: number;
  } | null;
  readonly model?: string;
  readonly finishReason?: string;
  readonly status?: number;
  readonly headers?: Readonly<Record<string, string>>;
  /** The `error.message` of an error answer (default `Fake error <status>`). */
  readonly errorMessage?: string;
  /** Seconds between SSE events (slow streaming). */
  readonly chunkDelaySeconds?: number;
  /** Seconds before the response starts. */
  readonly delaySeconds?: number;
  /** Stop after this many text chunks and keep the connection open (a stalled stream). */
  readonly hangAfterChunks?: number;
}

/**
 * One request the fake server received.
 *
 * @example
 * const request = await server.nextRequest();
 * const { early } = await request.closed; // true: the client hung up mid-answer
 */
export interface FakeRequest {
  readonly body: Record<string, unknown>;
  readonly headers: IncomingMessage["headers"];
  readonly stream: boolean;
  /** `stream_options.include_usage` was set (only then does a stream carry a usage chunk). */
  readonly includeUsage: boolean;
  /** `performance.now()` when it arrived. */
  readonly receivedAt: number;
  /** Resolves when the response's connection closed: `early` when that was before the end. */
  readonly closed: Promise<{ readonly early: boolean; readonly at: number }>;
}

/**
 * What the server answers a request with when nothing was queued (`enqueue`): a function of the
 * request, e.g. a reply per prompt.
 *
 * @example
 * const respond: FakeResponder = (req) => ({ text: JSON.stringify(req.body["messages"]).includes("refund") ? "Refunded." : "Hello." });
 */
export type FakeResponder = (request: FakeRequest) => FakeReply;

/**
 * Options of {@link FakeOpenAIServer.start}.
 *
 * @example
 * const options: FakeOpenAIServerOptions = { port: 4010, respond: () => ({ text: "Hi" }) };
 */
export interface FakeOpenAIServerOptions {
  /** Answers requests nothing was queued for. Default: echoes the last user message. */
  respond?: FakeResponder;
  /**
   * The port on 127.0.0.1. Default `0`: a free one. A fixed port lets several processes (an
   * app's replicas, a test runner and the app it starts) share one fake model by its URL.
   */
  port?: number;
}

function lastUserText(body: Record<string, unknown>): string {
  const messages = Array.isArray(body["messages"]) ? (body["messages"] as unknown[]) : [];
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i] as { role?: unknown; content?: unknown };
    if (m.role === "user") {
      if (typeof m.content === "string") return m.content;
      if (Array.isArray(m.content)) {
        return m.content
          .map((p: { text?: unknown }) => (typeof p.text === "string" ? p.text : ""))
          .join("");
      }
    }
  }
  return "";
}

function usageJson(u: NonNullable<FakeReply["usage"]>): Record<string, unknown> {
  return {
    prompt_tokens: u.promptTokens,
    completion_tokens: u.completionTokens,
    total_tokens: u.promptTokens + u.completionTokens,
    prompt_tokens_details: { cached_tokens: u.cachedTokens ?? 0 },
    completion_tokens_details: { reasoning_tokens: u.reasoningTokens ?? 0 },
  };
}

function defaultUsage(
  body: Record<string, unknown>,
  text: string,
): NonNullable<FakeReply["usage"]> {
  return {
    promptTokens: Math.ceil(JSON.stringify(body["messages"] ?? []).length / 4),
    completionTokens: Math.ceil(text.length / 4),
  };
}

/**
 * A local stand-in for the OpenAI Chat Completions API (`POST /v1/chat/completions`) on
 * 127.0.0.1 and a free port, for tests and benchmarks of code that talks to an OpenAI-compatible
 * provider: JSON and SSE answers (text, `tool_calls` deltas, a usage chunk only when
 * `stream_options.include_usage` is set, as the real API does), error statuses with headers,
 * slow and stalled streams. Replies come from the queue (`enqueue`), else from `respond`
 * (default: echoes the last user message). Every request is recorded, with when its connection
 * closed.
 *
 * @example
 * const server = await FakeOpenAIServer.start();
 * const provider = createOpenAICompatible({ name: "fake", baseURL: server.url, includeUsage: true });
 * server.enqueue({ text: "Hello there" });
 * // ... call provider.chatModel("gpt-4o-mini") ...
 * await server.close();
 */
export class FakeOpenAIServer {
  readonly requests: FakeRequest[] = [];
  readonly #server: Server;
  readonly #queue: FakeReply[] = [];
  readonly #respond: FakeResponder;
  readonly #waiters: ((r: FakeRequest) => void)[] = [];
  readonly #timers = new Set<ReturnType<typeof setTimeout>>();
  #url = "";

  private constructor(respond: FakeResponder | undefined) {
    this.#respond = respond ?? ((req) => ({ text: `You said: ${lastUserText(req.body)}` }));
    this.#server = createServer((req, res) => void this.#handle(req, res));
    this.#server.keepAliveTimeout = 1000;
  }

  /**
   * Starts a server on 127.0.0.1, on `options.port` (default: a free port). A port that is not
   * an integer from 0 to 65535 is INVALID_OPTIONS; one already in use is UNAVAILABLE.
   */
  static async start(options: FakeOpenAIServerOptions = {}): Promise<FakeOpenAIServer> {
    const port = options.port ?? 0;
    if (!Number.isInteger(port) || port < 0 || port > 65_535) {
      throw new NervaError(
        ErrorCode.INVALID_OPTIONS,
        `Invalid options.port: must be an integer from 0 to 65535 (got ${String(port)}); 0 takes a free port.`,
        { issues: [{ path: "options.port", message: "must be an integer from 0 to 65535" }] },
      );
    }
    const server = new FakeOpenAIServer(options.respond);
    await new Promise<void>((resolve, reject) => {
      server.#server.once("error", (err: NodeJS.ErrnoException) =>
        reject(
          err.code === "EADDRINUSE"
            ? new NervaError(
                ErrorCode.UNAVAILABLE,
                `Port ${port} on 127.0.0.1 is in use: pick another options.port, or 0 for a free one.`,
              )
            : err,
        ),
      );
      server.#server.listen(port, "127.0.0.1", resolve);
    });
    const { port: bound } = server.#server.address() as AddressInfo;
    server.#url = `http://127.0.0.1:${bound}/v1`;
    return server;
  }

  /** The base URL to give a provider (`http://127.0.0.1:<port>/v1`). */
  get url(): string {
    return this.#url;
  }

  /** Queues replies for the next requests, in order. */
  enqueue(...replies: FakeReply[]): this {
    this.#queue.push(...replies);
    return this;
  }

  /** Resolves with the next request to arrive. */
  nextRequest(): Promise<FakeRequest> {
    return new Promise((resolve) => this.#waiters.push(resolve));
  }

  /** Stops listening and closes every connection. */
  async close(): Promise<void> {
    for (const t of this.#timers) clearTimeout(t);
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const raw: Buffer[] = [];
    for await (const chunk of req) raw.push(chunk as Buffer);
    if (req.method !== "POST" || !req.url?.endsWith("/chat/completions")) {
      res.writeHead(404, { "content-type": "application/json" });
      res.end(
        JSON.stringify({
          error: { message: `No route ${req.method} ${req.url}`, type: "not_found" },
        }),
      );
      return;
    }
    let body: Record<string, unknown>;
    try {
      body = JSON.parse(Buffer.concat(raw).toString("utf8")) as Record<string, unknown>;
    } catch {
      res.writeHead(400, { "content-type": "application/json" });
      res.end(
        JSON.stringify({ error: { message: "Body is not JSON", type: "invalid_request_error" } }),
      );
      return;
    }
    let ended = false;
    const closed = new Promise<{ early: boolean; at: number }>((resolve) =>
      res.once("close", () => {
        ended = true;
        resolve({ early: !res.writableFinished, at: performance.now() });
      }),
    );
    const options = body["stream_options"] as { include_usage?: unknown } | undefined;
    const request: FakeRequest = {
      body,
      headers: req.headers,
      stream: body["stream"] === true,
      includeUsage: options?.include_usage === true,
      receivedAt: performance.now(),
      closed,
    };
    this.requests.push(request);
    this.#waiters.splice(0).forEach((w) => w(request));
    const reply = this.#queue.shift() ?? this.#respond(request);
    if (reply.delaySeconds !== undefined) await this.#sleep(reply.delaySeconds * 1000);
    if (ended) return;
    if (reply.status !== undefined && reply.status >= 400) {
      res.writeHead(reply.status, { "content-type": "application/json", ...reply.headers });
      res.end(
        JSON.stringify({
          error: {
            message: reply.errorMessage ?? `Fake error ${reply.status}`,
            type: "fake_error",
            code: reply.status,
          },
        }),
      );
      return;
    }
    if (request.stream) await this.#sse(request, reply, res, () => ended);
    else this.#json(request, reply, res);
  }

  #sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const t = setTimeout(() => {
        this.#timers.delete(t);
        resolve();
      }, ms);
      this.#timers.add(t);
    });
  }

  #json(request: FakeRequest, reply: FakeReply, res: ServerResponse): void {
    const text = reply.text ?? (reply.chunks ?? []).join("");
    const toolCalls = (reply.toolCalls ?? []).map((c, i) => ({
      id: c.id ?? `call_${i + 1}`,
      type: "function",
      function: {
        name: c.name,
        arguments: typeof c.arguments === "string" ? c.arguments : JSON.stringify(c.arguments),
      },
    }));
    const usage = reply.usage === undefined ? defaultUsage(request.body, text) : reply.usage;
    const json = {
      id: "chatcmpl-fake",
      object: "chat.completion",
      created: Math.floor(Date.now() / 1000),
      model: reply.model ?? String(request.body["model"] ?? "fake"),
      choices: [
        {
          index: 0,
          message: {
            role: "assistant",
            content: toolCalls.length > 0 && text === "" ? null : text,
            ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}),
          },
          finish_reason: reply.finishReason ?? (toolCalls.length > 0 ? "tool_calls" : "stop"),
        },
      ],
      ...(usage === null ? {} : { usage: usageJson(usage) }),
    };
    res.writeHead(200, { "content-type": "application/json", ...reply.headers });
    res.end(JSON.stringify(json));
  }

  async #sse(
    request: FakeRequest,
    reply: FakeReply,
    res: ServerResponse,
    isEnded: () => boolean,
  ): Promise<void> {
    const text = reply.text ?? "";
    const chunks = reply.chunks ?? (text === "" ? [] : (text.match(/\S+\s*|\s+/g) ?? []));
    const model = reply.model ?? String(request.body["model"] ?? "fake");
    const created = Math.floor(Date.now() / 1000);
    const event = (choices: unknown[], extra: Record<string, unknown> = {}): string =>
      `data: ${JSON.stringify({ id: "chatcmpl-fake", object: "chat.completion.chunk", created, model, choices, ...extra })}\n\n`;
    res.writeHead(200, {
      "content-type": "text/event-stream",
      "cache-control": "no-cache",
      ...reply.headers,
    });
    const write = async (data: string): Promise<boolean> => {
      if (isEnded()) return false;
      if (reply.chunkDelaySeconds !== undefined && reply.chunkDelaySeconds > 0) {
        await this.#sleep(reply.chunkDelaySeconds * 1000);
        if (isEnded()) return false;
      }
      if (!res.write(data)) await new Promise((r) => res.once("drain", r));
      return !isEnded();
    };
    if (
      !(await write(
        event([{ index: 0, delta: { role: "assistant", content: "" }, finish_reason: null }]),
      ))
    ) {
      return;
    }
    for (let i = 0; i < chunks.length; i++) {
      if (reply.hangAfterChunks !== undefined && i >= reply.hangAfterChunks) return; // stalled
      const delta = { content: chunks[i] };
      if (!(await write(event([{ index: 0, delta, finish_reason: null }])))) return;
    }
    const calls = reply.toolCalls ?? [];
    for (let i = 0; i < calls.length; i++) {
      const c = calls[i]!;
      const args = typeof c.arguments === "string" ? c.arguments : JSON.stringify(c.arguments);
      const head = {
        index: i,
        id: c.id ?? `call_${i + 1}`,
        type: "function",
        function: { name: c.name, arguments: "" },
      };
      if (!(await write(event([{ index: 0, delta: { tool_calls: [head] }, finish_reason: null }]))))
        return;
      const half = Math.ceil(args.length / 2);
      for (const part of [args.slice(0, half), args.slice(half)]) {
        if (part === "") continue;
        const delta = { tool_calls: [{ index: i, function: { arguments: part } }] };
        if (!(await write(event([{ index: 0, delta, finish_reason: null }])))) return;
      }
    }
    const finish = reply.finishReason ?? (calls.length > 0 ? "tool_calls" : "stop");
    if (!(await write(event([{ index: 0, delta: {}, finish_reason: finish }])))) return;
    const usage =
      reply.usage === undefined ? defaultUsage(request.body, chunks.join("")) : reply.usage;
    if (request.includeUsage && usage !== null) {
      if (!(await write(event([], { usage: usageJson(usage) })))) return;
    }
    if (!(await write("data: [DONE]\n\n"))) return;
    res.end();
  }
}
