import { ErrorCode, NervaError } from "../errors.js";

/**
 * One Server-Sent Event as a client sees it.
 *
 * @example
 * for await (const { event, data } of readSSEEvents(body)) if (event === "done") break;
 */
export interface SSEEvent {
  /** `message` unless the server named it (`done`, `error`...). */
  readonly event: string;
  readonly data: string;
  readonly id: string | null;
}

/**
 * Options of {@link readSSEEvents}.
 *
 * @example
 * const options: ReadSSEOptions = { maxEventChars: 1024 * 1024 };
 */
export interface ReadSSEOptions {
  /**
   * Longest line, and most data in one event, in characters; past it the read fails with a
   * NervaError `INVALID_INPUT` rather than buffering what the server sends. Default 16 MiB.
   */
  readonly maxEventChars?: number;
}

/** Default {@link ReadSSEOptions.maxEventChars}. */
const MAX_EVENT_CHARS = 16 * 1024 * 1024;

/**
 * Parses a Server-Sent Events body (a `fetch` response body, an `IncomingMessage`, any async
 * iterable of bytes or text) into events, as an `EventSource` would: `data:` lines joined with
 * `\n`, one leading space dropped, comments ignored. The server is not trusted: a line or an
 * event's data longer than `maxEventChars` throws NervaError `INVALID_INPUT`, and each piece
 * received is searched for line ends once (the work grows with the bytes received, no faster).
 *
 * @example
 * const res = await fetch(`${url}/chat/stream`, { method: "POST", body });
 * for await (const e of readSSEEvents(res.body!)) if (e.event === "message") process.stdout.write(e.data);
 */
export function readSSEEvents(
  body: AsyncIterable<Uint8Array | string>,
  options: ReadSSEOptions = {},
): AsyncGenerator<SSEEvent, void, undefined> {
  const events = parse(body, options);
  let started = false;
  // However the read ends, the body is closed: a generator that never started would not reach
  // its own `for await`, so an early `return()` (or refused options) closes the body here.
  const closeBody = async (): Promise<void> => {
    await body[Symbol.asyncIterator]().return?.();
  };
  const wrapped: AsyncGenerator<SSEEvent, void, undefined> = {
    async next() {
      if (!started) {
        started = true;
        const max = options.maxEventChars ?? MAX_EVENT_CHARS;
        if (!Number.isInteger(max) || max < 1) {
          await closeBody().catch(() => undefined);
          await events.return();
          throw new NervaError(
            ErrorCode.INVALID_OPTIONS,
            `Invalid options.maxEventChars: must be a positive integer (got ${String(max)}).`,
            { issues: [{ path: "options.maxEventChars", message: "must be a positive integer" }] },
          );
        }
      }
      return events.next();
    },
    async return() {
      if (!started) {
        started = true;
        await closeBody().catch(() => undefined);
      }
      return events.return();
    },
    async throw(err: unknown) {
      if (!started) {
        started = true;
        await closeBody().catch(() => undefined);
      }
      return events.throw(err);
    },
    [Symbol.asyncIterator]() {
      return wrapped;
    },
  };
  return wrapped;
}

async function* parse(
  body: AsyncIterable<Uint8Array | string>,
  options: ReadSSEOptions,
): AsyncGenerator<SSEEvent, void, undefined> {
  const max = options.maxEventChars ?? MAX_EVENT_CHARS;
  const tooLarge = (what: string): NervaError =>
    new NervaError(
      ErrorCode.INVALID_INPUT,
      `Invalid event stream: ${what} is longer than ${max} characters (maxEventChars). Raise maxEventChars if the server is trusted to send more.`,
      { issues: [{ path: "body", message: `${what} longer than ${max} characters` }] },
    );
  const lineEnd = /\r\n|\r|\n/g;
  const decoder = new TextDecoder();
  // The start of a line whose end has not arrived, in pieces: joined once, when it ends.
  let pending: string[] = [];
  let pendingChars = 0;
  // The last piece ended with "\r": a "\n" opening the next one belongs to it.
  let skipLF = false;
  let event = "message";
  let data: string[] = [];
  let dataChars = 0;
  let id: string | null = null;
  let sawData = false;
  for await (const piece of body) {
    const text = typeof piece === "string" ? piece : decoder.decode(piece, { stream: true });
    if (text.length === 0) continue;
    let start = skipLF && text.charCodeAt(0) === 0x0a ? 1 : 0;
    skipLF = false;
    for (;;) {
      lineEnd.lastIndex = start;
      const match = lineEnd.exec(text);
      if (match === null) {
        if (start < text.length) {
          pendingChars += text.length - start;
          if (pendingChars > max) throw tooLarge("a line");
          pending.push(start === 0 ? text : text.slice(start));
        }
        break;
      }
      if (pendingChars + match.index - start > max) throw tooLarge("a line");
      const tail = text.slice(start, match.index);
      const line = pending.length === 0 ? tail : pending.join("") + tail;
      pending = [];
      pendingChars = 0;
      start = match.index + match[0].length;
      if (match[0] === "\r" && start === text.length) skipLF = true;
      if (line === "") {
        if (sawData) yield { event, data: data.join("\n"), id };
        event = "message";
        data = [];
        dataChars = 0;
        sawData = false;
        continue;
      }
      if (line.startsWith(":")) continue;
      const colon = line.indexOf(":");
      const field = colon === -1 ? line : line.slice(0, colon);
      let value = colon === -1 ? "" : line.slice(colon + 1);
      if (value.startsWith(" ")) value = value.slice(1);
      if (field === "data") {
        dataChars += value.length + (sawData ? 1 : 0);
        if (dataChars > max) throw tooLarge("an event's data");
        data.push(value);
        sawData = true;
      } else if (field === "event") event = value;
      else if (field === "id") id = value;
    }
  }
}
