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
 * Parses a Server-Sent Events body (a `fetch` response body, an `IncomingMessage`, any async
 * iterable of bytes or text) into events, as an `EventSource` would: `data:` lines joined with
 * `\n`, one leading space dropped, comments ignored.
 *
 * @example
 * const res = await fetch(`${url}/chat/stream`, { method: "POST", body });
 * for await (const e of readSSEEvents(res.body!)) if (e.event === "message") process.stdout.write(e.data);
 */
export async function* readSSEEvents(
  body: AsyncIterable<Uint8Array | string>,
): AsyncGenerator<SSEEvent, void, undefined> {
  const decoder = new TextDecoder();
  let buffer = "";
  let event = "message";
  let data: string[] = [];
  let id: string | null = null;
  let sawData = false;
  for await (const piece of body) {
    buffer += typeof piece === "string" ? piece : decoder.decode(piece, { stream: true });
    for (;;) {
      const match = /\r\n|\r|\n/.exec(buffer);
      if (match === null) break;
      // A lone "\r" at the end may be the first half of "\r\n": wait for more input.
      if (match[0] === "\r" && match.index === buffer.length - 1) break;
      const line = buffer.slice(0, match.index);
      buffer = buffer.slice(match.index + match[0].length);
      if (line === "") {
        if (sawData) yield { event, data: data.join("\n"), id };
        event = "message";
        data = [];
        sawData = false;
        continue;
      }
      if (line.startsWith(":")) continue;
      const colon = line.indexOf(":");
      const field = colon === -1 ? line : line.slice(0, colon);
      let value = colon === -1 ? "" : line.slice(colon + 1);
      if (value.startsWith(" ")) value = value.slice(1);
      if (field === "data") {
        data.push(value);
        sawData = true;
      } else if (field === "event") event = value;
      else if (field === "id") id = value;
    }
  }
}
