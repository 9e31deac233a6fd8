import { spawn } from "node:child_process";
import { once } from "node:events";
import { readSSEEvents, type SSEEvent } from "@nerva/core/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createModel } from "@nerva/ai-sdk";
import { scriptedModel } from "@nerva/ai-sdk/testing";
import { createAuth } from "../auth.js";
import { createExampleRoutes, type ExampleAppDeps } from "../routes.js";
import { createExampleService, type ExampleService } from "../service.js";
import { crashingOrchestrator, describeExampleBadClients } from "./example-bad-clients.js";
import { describeExampleProtocols } from "./example-protocols-suite.js";
import { SUITE_ENV, describeExampleService } from "./example-service-suite.js";

/** A started example app: where it listens and how to stop it. */
export interface StartedExampleApp {
  readonly url: string;
  close(): Promise<void>;
}

/** How {@link describeExampleApp} starts one example app and what differs between the apps. */
export interface ExampleAppSuiteOptions {
  /**
   * Starts the app on 127.0.0.1, port 0, with the example service in embedded mode (its
   * orchestrator and route bodies) and a fresh dev auth.
   */
  start(deps: ExampleAppDeps): Promise<StartedExampleApp>;
}

/**
 * The routes every example app serves, checked over real HTTP: `POST /token`, `POST /chat` as the
 * token's user (tools, per-user and per-session memory), `POST /chat/stream` as Server-Sent Events,
 * 401 without a valid token, every bad request (malformed, oversized, non-JSON bodies, a
 * message that is not a string) or unexpected error answered with the Nerva JSON error body, and
 * the service's policy, approvals and durable runs (see `describeExampleService`), and the
 * protocols of frontends and other agents (`/api/chat`, `/ag-ui`, `/mcp`, see
 * `describeExampleProtocols`).
 *
 * @example
 * describeExampleApp("Express example app", { start: async (deps) => listenOnPort0(createApp(deps)) });
 */
export function describeExampleApp(label: string, options: ExampleAppSuiteOptions): void {
  describe(label, () => {
    // The apps' own mode without a key or REDIS_URL: the demo agents plus the concierge on the
    // scripted model, embedded state.
    let service: ExampleService;
    let app: StartedExampleApp;

    beforeAll(async () => {
      service = await createExampleService(SUITE_ENV, {
        model: createModel(scriptedModel()),
        log: () => undefined,
      });
      await service.start();
      const orchestrator = crashingOrchestrator(service.orchestrator);
      app = await options.start({
        orchestrator,
        routes: createExampleRoutes({
          orchestrator,
          policy: service.policy,
          runs: service.backend.queue("runs"),
        }),
        protocols: service.protocols,
        auth: createAuth(),
      });
    });
    afterAll(async () => {
      await app?.close();
      await service?.close();
    });

    const warnings: string[] = [];
    const onWarning = (w: Error) => warnings.push(w.name);
    beforeAll(() => void process.on("warning", onWarning));
    afterAll(() => void process.off("warning", onWarning));

    const tokenFor = async (user: string, roles: string[] = []): Promise<string> => {
      const res = await fetch(`${app.url}/token`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ user, roles }),
      });
      expect(res.status).toBe(200);
      return ((await res.json()) as { token: string }).token;
    };
    const chat = (token: string | null, message: unknown, headers: Record<string, string> = {}) =>
      fetch(`${app.url}/chat`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          ...(token === null ? {} : { authorization: `Bearer ${token}` }),
          ...headers,
        },
        body: JSON.stringify({ message }),
      });
    const text = async (res: Response) => ((await res.json()) as { text: string }).text;

    it("refuses requests without a valid token, with the Nerva error body", async () => {
      for (const token of [null, "not.a.jwt"]) {
        const res = await chat(token, "hello");
        expect(res.status).toBe(401);
        expect(res.headers.get("www-authenticate")).toMatch(/^Bearer/);
        const requestId = res.headers.get("x-request-id");
        expect(requestId).toMatch(/^[0-9a-f-]{36}$/);
        expect(((await res.json()) as { error: unknown }).error).toMatchObject({
          code: "UNAUTHENTICATED",
          requestId,
        });
      }
    });

    it("answers /chat through the orchestrator as the token's user", async () => {
      const token = await tokenFor("alice");
      const res = await chat(token, "hello there");
      expect(res.status).toBe(200);
      const body = (await res.json()) as { text: string; handler: string; requestId: string };
      // What the rules do not match goes to the concierge (a model agent).
      expect(body.handler).toBe("concierge_agent");
      expect(body.text).toContain("You said: hello there");
      expect(body.requestId).toBe(res.headers.get("x-request-id"));
      expect(await text(await chat(token, "echo hello there"))).toBe(
        "alice, you said: echo hello there",
      );
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
      const res = await fetch(`${app.url}/chat/stream`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
        body: JSON.stringify({ message: "Tell me a story" }),
      });
      expect(res.headers.get("content-type")).toMatch(/^text\/event-stream/);
      const events: SSEEvent[] = [];
      for await (const e of readSSEEvents(res.body as AsyncIterable<Uint8Array>)) events.push(e);
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

    describeExampleBadClients(() => app, tokenFor);
    describeExampleService(() => app, tokenFor);
    describeExampleProtocols(() => app, tokenFor);
  });
}

/** How {@link describeExampleMain} runs an app's `src/main.ts`. */
export interface ExampleMainSuiteOptions {
  /** The app's folder (the child process's working directory). */
  appDir: string;
  /** Arguments of `node`, e.g. `["--conditions=@nerva/source", "--import", "tsx", "src/main.ts"]`. */
  nodeArgs: readonly string[];
  /** The `name` the app's `GET /` answers with. */
  name: string;
  /** One run per entry, with these extra environment variables. Default: one run, none. */
  runs?: readonly Record<string, string>[];
  /** Checks made before each run (e.g. that the packages it loads are built). */
  beforeRun?(): void;
}

/**
 * Runs an example app's entry point as a real process with `PORT=0` and checks that it prints the
 * URL it listens on (a free port, not the default 3000) and the model in use (the scripted one,
 * with no key), answers there, and stops on SIGTERM. With `NERVA_TRACE_UI=1` in a run's
 * environment, its trace viewer shows a request just made; without, there is no viewer.
 *
 * @example
 * describeExampleMain("Express example main", {
 *   appDir, name: "nerva-express-example",
 *   nodeArgs: ["--conditions=@nerva/source", "--import", "tsx", "src/main.ts"],
 * });
 */
export function describeExampleMain(label: string, options: ExampleMainSuiteOptions): void {
  const runs = (options.runs ?? [{}]).map((env) => {
    const shown = Object.entries(env).map(([k, v]) => `${k}=${v}`);
    return { env, title: shown.length === 0 ? "" : ` (${shown.join(", ")})` };
  });
  describe(label, () => {
    for (const run of runs) {
      it(`starts on PORT=0${run.title} and prints its URL`, { timeout: 30_000 }, async () => {
        options.beforeRun?.();
        const child = spawn(process.execPath, [...options.nodeArgs], {
          cwd: options.appDir,
          // No model key: the apps' embedded default (the scripted model) is what is checked.
          env: { ...process.env, OPENAI_API_KEY: "", ANTHROPIC_API_KEY: "", ...run.env, PORT: "0" },
          stdio: ["ignore", "pipe", "pipe"],
        });
        try {
          const printed = await new Promise<string>((resolve, reject) => {
            let out = "";
            child.stdout.on("data", (d: Buffer) => {
              out += d.toString();
              const match = /listening on (http:\/\/\S+)\n {2}model: scripted/.exec(out);
              if (match?.[1] !== undefined) resolve(match[1]);
            });
            child.once("exit", (code) => reject(new Error(`exited with ${code}: ${out}`)));
          });
          expect(printed).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
          expect(printed).not.toMatch(/:3000$/);
          const res = await fetch(`${printed}/`);
          expect(((await res.json()) as { name: string }).name).toBe(options.name);
          await checkTraceViewer(printed, run.env["NERVA_TRACE_UI"] === "1");
        } finally {
          if (child.exitCode === null && child.signalCode === null) {
            const exited = once(child, "exit");
            child.kill("SIGTERM");
            await exited;
          }
        }
      });
    }
  });
}

/** The trace viewer of a running example app shows the request just made (or is absent). */
async function checkTraceViewer(url: string, on: boolean): Promise<void> {
  const viewer = `${url}/_nerva/traces`;
  if (!on) {
    expect((await fetch(viewer)).status).not.toBe(200);
    return;
  }
  const minted = await fetch(`${url}/token`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ user: "alice" }),
  });
  const { token } = (await minted.json()) as { token: string };
  const chat = await fetch(`${url}/chat`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
    body: JSON.stringify({ message: "Plan a trip to Rome" }),
  });
  expect(chat.status).toBe(200);
  const page = await fetch(viewer);
  expect(page.status).toBe(200);
  expect(await page.text()).toContain("<title>Nerva traces</title>");
  const list = (await (await fetch(`${viewer}/api/traces`)).json()) as {
    traces: { traceId: string; rootName: string; userId: string | null }[];
  };
  expect(list.traces[0]).toMatchObject({ rootName: "handle", userId: "alice" });
  const trace = (await (await fetch(`${viewer}/api/traces/${list.traces[0]!.traceId}`)).json()) as {
    spans: { name: string }[];
  };
  expect(trace.spans.map((s) => s.name)).toEqual(
    expect.arrayContaining(["delegate", "tools.call"]),
  );
}
