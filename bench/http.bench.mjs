// HTTP bridges: POST /chat through the bridge and orchestrator.handle(), per framework, against
// bare routes in the same framework. Four servers per framework, identical but for the marked part
// (same JSON body parsing, same auth stub setting req.user, same JSON answer):
//   bare         the agent function called directly
//   bare-handle  orchestrator.handle() with a hand-made ExecContext.create({ userId })   (no bridge)
//   context      the bridge's context (req.nervaCtx / @NervaCtx()), agent called directly
//   bridge       the bridge's context + orchestrator.handle()                            (the product)
// The bridge's own cost is bridge vs bare-handle: target (DESIGN §5) ≥ 85% of its req/s. Reported
// as req/s (autocannon, 50 connections) and as the server's CPU time per request, which is far less
// sensitive than req/s to other load on a shared machine.
// Run: pnpm bench http   (or: pnpm build && node bench/http.bench.mjs)
// Where `taskset` exists and there are at least 2 CPUs, the servers run on CPU 1 and autocannon
// (this process) on CPU 0, so the load generator never takes CPU from the server it measures.
// Env: BENCH_DURATION (s per run, default 5), BENCH_ROUNDS (default 3), BENCH_FRAMEWORKS (csv),
// BENCH_PIN=0 (do not pin). Servers only: BENCH_NESTJS_DIST (a directory holding another build of
// @nerva/nestjs), BENCH_NEST_EXCEPTION_FILTER=0 (NervaModule without its filter); see http-ab.mjs.
import { execFileSync, spawn } from "node:child_process";
import { availableParallelism, loadavg } from "node:os";
import { createRequire } from "node:module";
import { resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const self = fileURLToPath(import.meta.url);
const root = new URL("../", import.meta.url);
const FRAMEWORKS = ["express", "fastify", "nestjs-express", "nestjs-fastify"];
const VARIANTS = ["bare", "bare-handle", "context", "bridge"];
const DURATION_SECONDS = Number(process.env.BENCH_DURATION ?? 5);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const CONNECTIONS = 50;

/** `true` when this process was pinned to CPU 0 (and servers go to CPU 1). */
function pinLoadSide() {
  if (process.env.BENCH_PIN === "0" || availableParallelism() < 2) return false;
  try {
    execFileSync("taskset", ["-a", "-cp", "0", String(process.pid)], { stdio: "ignore" });
    return true;
  } catch {
    return false; // no taskset here: run unpinned, and say so in the result
  }
}
let pinned = false;

/** Imports `specifier` as packages/<pkg> sees it (frameworks are the bridges' dependencies). */
const from = (pkg, specifier) =>
  import(
    pathToFileURL(createRequire(new URL(`packages/${pkg}/package.json`, root)).resolve(specifier))
      .href
  );

// ---------------------------------------------------------------------------------------------
// Server side: `node http.bench.mjs --serve <framework> <variant>` prints { port }.

/** The agent every variant runs, directly or through the orchestrator. */
const agent = async (input) => `Processed: ${input.message}`;

async function makeWork(variant) {
  const core = await import("@nerva/core");
  const runtime = new core.InProcessRuntime({ timeoutSeconds: 30 });
  runtime.register("my_agent", agent);
  const orchestrator = new core.Orchestrator({
    router: new core.RuleRouter({ rules: [], defaultHandler: "my_agent" }),
    runtime,
  });
  const handle = async (message, ctx) => (await orchestrator.handle(message, ctx)).text;
  /** What a route does, given the message, the auth stub's user and the bridge's context getter. */
  return async (message, user, bridgeCtx) => {
    switch (variant) {
      case "bare":
        return { output: await agent({ message }), userId: user.id };
      case "bare-handle": {
        const ctx = core.ExecContext.create({ userId: user.id });
        try {
          return { output: await handle(message, ctx), userId: ctx.userId };
        } finally {
          ctx.dispose();
        }
      }
      case "context": {
        const ctx = bridgeCtx();
        return { output: await agent({ message }), userId: ctx.userId };
      }
      default: {
        const ctx = bridgeCtx();
        return { output: await handle(message, ctx), userId: ctx.userId };
      }
    }
  };
}

const usesBridge = (variant) => variant === "context" || variant === "bridge";

/** Stands in for the app's auth layer (same cost in every variant). */
const authStub = (req) => {
  req.user = { id: "bench-user", roles: ["member"] };
};

async function serveExpress(variant, work) {
  const { default: express } = await from("express", "express");
  const app = express();
  app.use(express.json());
  app.use((req, _res, next) => {
    authStub(req);
    next();
  });
  if (usesBridge(variant)) {
    const { nervaMiddleware } = await from("express", "@nerva/express");
    app.use(nervaMiddleware());
  }
  app.post("/chat", async (req, res) => {
    res.json(await work(req.body.message, req.user, () => req.nervaCtx));
  });
  if (usesBridge(variant)) {
    const { nervaErrorHandler } = await from("express", "@nerva/express");
    app.use(nervaErrorHandler());
  }
  return new Promise((resolve) => {
    const server = app.listen(0, "127.0.0.1", () => resolve(server.address().port));
  });
}

async function serveFastify(variant, work) {
  const { default: Fastify } = await from("fastify", "fastify");
  const app = Fastify();
  app.addHook("onRequest", (req, _reply, done) => {
    authStub(req);
    done();
  });
  if (usesBridge(variant)) {
    const { nervaPlugin } = await from("fastify", "@nerva/fastify");
    await app.register(nervaPlugin);
  }
  app.post("/chat", (req) => work(req.body.message, req.user, () => req.nervaCtx));
  await app.listen({ port: 0, host: "127.0.0.1" });
  return app.server.address().port;
}

async function serveNest(platform, variant, work) {
  await from("nestjs", "reflect-metadata");
  const { Body, Controller, Injectable, Module, Post, UseGuards, createParamDecorator } =
    await from("nestjs", "@nestjs/common");
  const { NestFactory } = await from("nestjs", "@nestjs/core");
  // For A/B runs (bench/http-ab.mjs): another build of @nerva/nestjs, e.g. an older commit's.
  const nerva = process.env.BENCH_NESTJS_DIST
    ? await import(pathToFileURL(resolve(process.env.BENCH_NESTJS_DIST, "index.js")).href)
    : await from("nestjs", "@nerva/nestjs");
  // Plain JavaScript: decorators applied the way tsc's output applies them.
  const decorate = (decorators, target, key, desc) =>
    Reflect.decorate(decorators, target, key, desc);
  const param = (index, decorator) => (target, key) => decorator(target, key, index);

  // A guard standing in for the app's auth (Nest's place for it), in every variant.
  class AuthGuard {
    canActivate(context) {
      authStub(context.switchToHttp().getRequest());
      return true;
    }
  }
  decorate([Injectable()], AuthGuard);
  const User = createParamDecorator((_d, context) => context.switchToHttp().getRequest().user);

  class ChatController {
    chat(body, user, ctx) {
      return work(body.message, user, () => ctx);
    }
  }
  const params = [param(0, Body()), param(1, User())];
  if (usesBridge(variant)) params.push(param(2, nerva.NervaCtx()));
  const desc = Object.getOwnPropertyDescriptor(ChatController.prototype, "chat");
  decorate([Post("chat"), UseGuards(AuthGuard), ...params], ChatController.prototype, "chat", desc);
  decorate([Controller()], ChatController);

  class AppModule {}
  decorate(
    [
      Module({
        imports: usesBridge(variant)
          ? [
              nerva.NervaModule.forRoot(
                process.env.BENCH_NEST_EXCEPTION_FILTER === "0" ? { exceptionFilter: false } : {},
              ),
            ]
          : [],
        controllers: [ChatController],
        providers: [AuthGuard],
      }),
    ],
    AppModule,
  );
  const adapter =
    platform === "fastify"
      ? new (await from("nestjs", "@nestjs/platform-fastify")).FastifyAdapter()
      : new (await from("nestjs", "@nestjs/platform-express")).ExpressAdapter();
  const app = await NestFactory.create(AppModule, adapter, { logger: false });
  await app.listen(0, "127.0.0.1");
  return app.getHttpServer().address().port;
}

async function serve(framework, variant) {
  const work = await makeWork(variant);
  let port;
  if (framework === "express") port = await serveExpress(variant, work);
  else if (framework === "fastify") port = await serveFastify(variant, work);
  else port = await serveNest(framework.slice("nestjs-".length), variant, work);
  // The load side asks for this process's CPU time around each run.
  process.on("message", (m) => {
    if (m === "cpu") process.send(process.cpuUsage());
  });
  console.log(JSON.stringify({ port }));
}

// ---------------------------------------------------------------------------------------------
// Load side.

async function start(framework, variant) {
  const command = [process.execPath, self, "--serve", framework, variant];
  if (pinned) command.unshift("taskset", "-c", "1");
  const child = spawn(command[0], command.slice(1), {
    stdio: ["ignore", "pipe", "inherit", "ipc"],
    env: { ...process.env, NODE_ENV: "production" },
  });
  const info = await new Promise((resolve, reject) => {
    let out = "";
    child.stdout.on("data", (d) => {
      out += d;
      const line = out.split("\n").find((l) => l.startsWith("{"));
      if (line !== undefined) resolve(JSON.parse(line));
    });
    child.once("exit", (code) =>
      reject(new Error(`${framework}/${variant} server exited ${code}`)),
    );
  });
  return { child, ...info };
}

const cpuOf = (child) =>
  new Promise((resolve) => {
    child.once("message", (u) => resolve(u.user + u.system));
    child.send("cpu");
  });

async function load(port, seconds) {
  const { default: autocannon } = await import("autocannon");
  const result = await autocannon({
    url: `http://127.0.0.1:${port}/chat`,
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ message: "Book me a flight" }),
    connections: CONNECTIONS,
    duration: seconds,
  });
  if (result.non2xx > 0 || result.errors > 0) {
    throw new Error(`port ${port}: ${result.non2xx} non-2xx answers, ${result.errors} errors`);
  }
  return { rps: result.requests.average, total: result.requests.total };
}

/** Requests/s and server CPU µs per request of one autocannon run against `server`. */
async function measure(server, seconds) {
  const cpuBefore = await cpuOf(server.child);
  const { rps, total } = await load(server.port, seconds);
  const cpuAfter = await cpuOf(server.child);
  return { rps, cpuUs: (cpuAfter - cpuBefore) / total };
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const ratio = (a, b) => +(a / b).toFixed(3);

async function main() {
  const wanted = (process.env.BENCH_FRAMEWORKS ?? FRAMEWORKS.join(",")).split(",");
  pinned = pinLoadSide();
  const result = {
    bench: "http",
    pinned,
    connections: CONNECTIONS,
    duration_seconds: DURATION_SECONDS,
    rounds: ROUNDS,
    // Other work on the machine moves req/s far more than CPU per request: say how much there was.
    load_average_at_start: loadavg().map((x) => +x.toFixed(2)),
  };
  for (const framework of FRAMEWORKS.filter((f) => wanted.includes(f))) {
    const servers = {};
    try {
      for (const variant of VARIANTS) servers[variant] = await start(framework, variant);
      // Warm every server (JIT, pools), then alternate rounds so drift hits all alike.
      for (const s of Object.values(servers)) await load(s.port, 2);
      const runs = Object.fromEntries(VARIANTS.map((v) => [v, []]));
      for (let r = 0; r < ROUNDS; r++) {
        for (const variant of VARIANTS) {
          runs[variant].push(await measure(servers[variant], DURATION_SECONDS));
        }
      }
      const rps = Object.fromEntries(VARIANTS.map((v) => [v, median(runs[v].map((x) => x.rps))]));
      const cpu = Object.fromEntries(VARIANTS.map((v) => [v, median(runs[v].map((x) => x.cpuUs))]));
      const f = {
        rps: Object.fromEntries(VARIANTS.map((v) => [v, Math.round(rps[v])])),
        cpu_us_per_request: Object.fromEntries(VARIANTS.map((v) => [v, +cpu[v].toFixed(1)])),
        // The bridge's own cost: the same handle() with and without the bridge.
        bridge_vs_bare_handle_rps: ratio(rps.bridge, rps["bare-handle"]),
        bridge_vs_bare_handle_cpu: ratio(cpu["bare-handle"], cpu.bridge),
        // Context alone, no handle(): what reading req.nervaCtx costs over a bare route.
        context_vs_bare_rps: ratio(rps.context, rps.bare),
        context_vs_bare_cpu: ratio(cpu.bare, cpu.context),
        // The whole stack (bridge + handle) against a route calling the agent directly.
        bridge_vs_bare_rps: ratio(rps.bridge, rps.bare),
        bridge_vs_bare_cpu: ratio(cpu.bare, cpu.bridge),
      };
      result[framework] = f;
      console.error(
        `${framework}: req/s ${VARIANTS.map((v) => `${v} ${f.rps[v]}`).join(", ")}; ` +
          `µs CPU/req ${VARIANTS.map((v) => `${v} ${f.cpu_us_per_request[v]}`).join(", ")}; ` +
          `bridge vs bare-handle ${(f.bridge_vs_bare_handle_rps * 100).toFixed(1)}% req/s ` +
          `(${(f.bridge_vs_bare_handle_cpu * 100).toFixed(1)}% by CPU)`,
      );
    } finally {
      for (const s of Object.values(servers)) s.child.kill("SIGKILL");
    }
  }
  result.load_average_at_end = loadavg().map((x) => +x.toFixed(2));
  console.log(JSON.stringify(result));
}

if (process.argv[2] === "--serve") {
  // Exit cleanly on SIGINT so `node --cpu-prof` can write its profile.
  process.on("SIGINT", () => process.exit(0));
  await serve(process.argv[3], process.argv[4]);
} else {
  await main();
}
