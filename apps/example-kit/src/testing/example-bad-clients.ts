import type { Orchestrator } from "@nerva/core";
import { INTERNAL_SIGNS, sendRawRequest } from "@nerva/core/testing";
import { describe, expect, it } from "vitest";

/** In the message of the error the crashing orchestrator throws: no answer may contain it. */
const SECRET = "example-internal-s3cret";
/** The message that makes {@link crashingOrchestrator}'s `handle` throw. */
export const CRASH_MESSAGE = "please crash now";

/**
 * `orchestrator`, except that `handle(CRASH_MESSAGE)` rejects with a `TypeError` whose message
 * holds a secret and a file path: an unexpected error thrown inside the app's route.
 */
export function crashingOrchestrator(orchestrator: Orchestrator): Orchestrator {
  return Object.create(orchestrator, {
    handle: {
      value: (message: unknown, ...rest: unknown[]) =>
        message === CRASH_MESSAGE
          ? Promise.reject(new TypeError(`${SECRET} at /srv/app/agents.js:10:5`))
          : (orchestrator.handle as (...args: unknown[]) => unknown).call(
              orchestrator,
              message,
              ...rest,
            ),
    },
    stream: { value: orchestrator.stream.bind(orchestrator) },
    handleApproved: { value: orchestrator.handleApproved.bind(orchestrator) },
    // Called by NervaModule on app.close(): the orchestrator's private state is on the original.
    close: { value: orchestrator.close.bind(orchestrator) },
  }) as Orchestrator;
}

const JSON_TYPE = { "content-type": "application/json" };
const CASES: readonly {
  name: string;
  path: "/chat" | "/chat/stream";
  headers: Record<string, string>;
  body?: string;
  status: number;
  code: string;
}[] = [
  {
    name: "malformed JSON",
    path: "/chat",
    headers: JSON_TYPE,
    body: '{"message": "hel',
    status: 400,
    code: "INVALID_INPUT",
  },
  {
    name: "a bare JSON string",
    path: "/chat",
    headers: JSON_TYPE,
    body: '"hello"',
    status: 400,
    code: "INVALID_INPUT",
  },
  {
    name: "a 10 MB body",
    path: "/chat",
    headers: JSON_TYPE,
    body: JSON.stringify({ message: "x".repeat(10 * 1024 * 1024) }),
    status: 413,
    code: "PAYLOAD_TOO_LARGE",
  },
  {
    name: "a text/plain body",
    path: "/chat",
    headers: { "content-type": "text/plain" },
    body: "hello",
    status: 415,
    code: "UNSUPPORTED_MEDIA_TYPE",
  },
  {
    name: "no body",
    path: "/chat",
    headers: { "content-length": "0" },
    status: 400,
    code: "INVALID_INPUT",
  },
  {
    name: "message 42",
    path: "/chat",
    headers: JSON_TYPE,
    body: '{"message":42}',
    status: 400,
    code: "INVALID_INPUT",
  },
  {
    name: "message null",
    path: "/chat",
    headers: JSON_TYPE,
    body: '{"message":null}',
    status: 400,
    code: "INVALID_INPUT",
  },
  {
    name: "message {}",
    path: "/chat",
    headers: JSON_TYPE,
    body: '{"message":{}}',
    status: 400,
    code: "INVALID_INPUT",
  },
  {
    name: "message 42 to the stream",
    path: "/chat/stream",
    headers: JSON_TYPE,
    body: '{"message":42}',
    status: 400,
    code: "INVALID_INPUT",
  },
  {
    name: "a text/plain body to the stream",
    path: "/chat/stream",
    headers: { "content-type": "text/plain" },
    body: "hello",
    status: 415,
    code: "UNSUPPORTED_MEDIA_TYPE",
  },
  {
    name: "an error thrown in the route",
    path: "/chat",
    headers: JSON_TYPE,
    body: JSON.stringify({ message: CRASH_MESSAGE }),
    status: 500,
    code: "INTERNAL",
  },
];

/**
 * An example app's answers to clients that send the wrong thing, and to an error nobody planned
 * for: each with its status, the Nerva JSON error body, the request id and no internals.
 */
export function describeExampleBadClients(
  app: () => { url: string },
  tokenFor: (user: string) => Promise<string>,
): void {
  describe("bad clients and unexpected errors", () => {
    it.each(CASES)("answers $name with $status $code and no internals", async (bad) => {
      const token = await tokenFor("mallory");
      const answer = await sendRawRequest(app().url, bad.path, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, ...bad.headers },
        ...(bad.body === undefined ? {} : { body: bad.body }),
      });
      expect(answer.status, answer.text).toBe(bad.status);
      expect(answer.headers["content-type"]).toMatch(/^application\/json/);
      const requestId = answer.headers["x-request-id"];
      expect(requestId).toMatch(/^[0-9a-f-]{36}$/);
      expect((JSON.parse(answer.text) as { error: unknown }).error).toMatchObject({
        code: bad.code,
        requestId,
      });
      expect(answer.text).not.toContain(SECRET);
      for (const sign of INTERNAL_SIGNS) expect(answer.text).not.toMatch(sign);
    });
  });
}
