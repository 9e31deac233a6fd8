import { spawn } from "node:child_process";
import { once } from "node:events";
import type { FastifyInstance } from "fastify";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { readSseEvents, type SseEvent } from "@nerva/core/http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createOrchestrator } from "./agents.js";
import { createApp } from "./app.js";
import { createAuth } from "./auth.js";

const demo = createOrchestrator();
let app: FastifyInstance;
let url: string;

beforeAll(async () => {
  app = await createApp({ orchestrator: demo.orchestrator, auth: createAuth() });
  url = await app.listen({ port: 0, host: "127.0.0.1" });
});
afterAll(async () => {
  await app.close();
  await demo.close();
});

const warnings: string[] = [];
process.on("warning", (w) => warnings.push(w.name));

const tokenFor = async (user: string): Promise<string> => {
  const res = await fetch(`${url}/token`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ user }),
  });
  expect(res.status).toBe(200);
  return ((await res.json()) as { token: string }).token;
};
const chat = (token: string | null, message: unknown, headers: Record<string, string> = {}) =>
  fetch(`${url}/chat`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      ...(token === null ? {} : { authorization: `Bearer ${token}` }),
      ...headers,
    },
    body: JSON.stringify({ message }),
  });
const text = async (res: Response) => ((await res.json()) as { text: string }).text;

describe("Fastify example app", () => {
  it("refuses requests without a valid token", async () => {
    const res = await chat(null, "hello");
    expect(res.status).toBe(401);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe("UNAUTHENTICATED");
    expect((await chat("not.a.jwt", "hello")).status).toBe(401);
  });

  it("answers /chat through the orchestrator as the token's user", async () => {
    const token = await tokenFor("alice");
    const res = await chat(token, "hello there");
    expect(res.status).toBe(200);
    const body = (await res.json()) as { text: string; handler: string; requestId: string };
    expect(body).toMatchObject({ text: "alice, you said: hello there", handler: "echo_agent" });
    expect(body.requestId).toBe(res.headers.get("x-request-id"));
    expect(await text(await chat(token, "Find me a flight to Lisbon"))).toBe(
      "Flights to Lisbon: NV101 to Lisbon at 08:15; NV205 to Lisbon at 17:40.",
    );
  });

  it("remembers a session's turns, apart from other users and sessions", async () => {
    const alice = await tokenFor("alice");
    await chat(alice, "my favourite colour is green");
    expect(await text(await chat(alice, "what did I say earlier?"))).toContain(
      '"my favourite colour is green"',
    );
    const bob = await tokenFor("bob");
    expect(await text(await chat(bob, "what did I say earlier?"))).toBe(
      "You have not told me anything yet in this session.",
    );
    const otherSession = await chat(alice, "what did I say earlier?", { "x-session-id": "fresh" });
    expect(await text(otherSession)).toBe("You have not told me anything yet in this session.");
  });

  it("streams /chat/stream as Server-Sent Events", async () => {
    const token = await tokenFor("carol");
    const res = await fetch(`${url}/chat/stream`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
      body: JSON.stringify({ message: "Tell me a story" }),
    });
    expect(res.headers.get("content-type")).toMatch(/^text\/event-stream/);
    const events: SseEvent[] = [];
    for await (const e of readSseEvents(res.body as AsyncIterable<Uint8Array>)) events.push(e);
    const chunks = events.filter((e) => e.event === "message").map((e) => e.data);
    expect(chunks.length).toBeGreaterThan(5);
    expect(chunks.join("")).toMatch(/^Once upon a time/);
    expect(events.at(-1)?.event).toBe("done");
    expect(warnings).not.toContain("MaxListenersExceededWarning");
    expect(JSON.parse(events.at(-1)?.data ?? "{}")).toMatchObject({
      requestId: res.headers.get("x-request-id"),
      result: { status: "success", handler: "story_agent" },
    });
  });

  it("answers 400 for a message that is not a string", async () => {
    const res = await chat(await tokenFor("dave"), { not: "a string" });
    expect(res.status).toBe(400);
  });
});

describe("Fastify example main", () => {
  it("starts on PORT=0 and prints its URL", { timeout: 30_000 }, async () => {
    const appDir = join(dirname(fileURLToPath(import.meta.url)), "..");
    const child = spawn(
      process.execPath,
      ["--conditions=source", "--import", "tsx", "src/main.ts"],
      { cwd: appDir, env: { ...process.env, PORT: "0" }, stdio: ["ignore", "pipe", "pipe"] },
    );
    try {
      const printed = await new Promise<string>((resolve, reject) => {
        let out = "";
        child.stdout.on("data", (d: Buffer) => {
          out += d.toString();
          const match = /listening on (http:\/\/\S+)/.exec(out);
          if (match?.[1] !== undefined) resolve(match[1]);
        });
        child.once("exit", (code) => reject(new Error(`exited with ${code}: ${out}`)));
      });
      expect(printed).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect(printed).not.toMatch(/:3000$/);
      const res = await fetch(`${printed}/`);
      expect(((await res.json()) as { name: string }).name).toBe("nerva-fastify-example");
    } finally {
      child.kill("SIGTERM");
      await once(child, "exit");
    }
  });
});
