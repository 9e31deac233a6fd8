import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { once } from "node:events";
import "reflect-metadata";
import type { AddressInfo } from "node:net";
import type { INestApplication } from "@nestjs/common";
import { NestFactory } from "@nestjs/core";
import { ExpressAdapter } from "@nestjs/platform-express";
import { FastifyAdapter } from "@nestjs/platform-fastify";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { readSseEvents, type SseEvent } from "@nerva/core/http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createOrchestrator } from "./agents.js";
import { createAppModule } from "./app.module.js";
import { createAuth } from "./auth.js";

describe.each(["express", "fastify"] as const)("NestJS example app on %s", (platform) => {
  const demo = createOrchestrator();
  let app: INestApplication;
  let url: string;

  beforeAll(async () => {
    const AppModule = createAppModule({ orchestrator: demo.orchestrator, auth: createAuth() });
    app = await NestFactory.create(
      AppModule,
      platform === "fastify" ? new FastifyAdapter() : new ExpressAdapter(),
      { logger: false },
    );
    await app.listen(0, "127.0.0.1");
    url = `http://127.0.0.1:${(app.getHttpServer().address() as AddressInfo).port}`;
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

  describe("routes", () => {
    it("refuses requests without a valid token", async () => {
      const res = await chat(null, "hello");
      expect(res.status).toBe(401);
      expect(res.headers.get("x-request-id")).toMatch(/[0-9a-f-]{36}/);
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
      const otherSession = await chat(alice, "what did I say earlier?", {
        "x-session-id": "fresh",
      });
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
      const res = await chat(await tokenFor("dave"), 42);
      expect(res.status).toBe(400);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe("INVALID_INPUT");
    });
  });
});

describe("NestJS example main", () => {
  it.each(["express", "fastify"])(
    "starts on PORT=0 (PLATFORM=%s) and prints its URL",
    { timeout: 30_000 },
    async (platform) => {
      const appDir = join(dirname(fileURLToPath(import.meta.url)), "..");
      // tsx compiles the app's files but not the decorators of workspace sources, so this runs
      // against the built @nerva packages, as a deployed app would.
      for (const pkg of ["core", "nestjs"]) {
        const dist = join(appDir, "../../packages", pkg, "dist/index.js");
        if (!existsSync(dist)) throw new Error(`${dist} is missing: run \`pnpm build\` first.`);
      }
      const child = spawn(process.execPath, ["--import", "tsx", "src/main.ts"], {
        cwd: appDir,
        env: { ...process.env, PORT: "0", PLATFORM: platform },
        stdio: ["ignore", "pipe", "pipe"],
      });
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
        expect(((await res.json()) as { name: string }).name).toBe("nerva-nestjs-example");
      } finally {
        child.kill("SIGTERM");
        await once(child, "exit");
      }
    },
  );
});
