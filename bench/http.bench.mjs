// HTTP bridges: POST /chat through the bridge (context from req.user, handle() over an
// in-process agent) vs a bare route in the same framework (same body parsing, same auth stub,
// same handler function called directly, same JSON answer). Per framework, requests/s with
// autocannon, plus the server's CPU time per request (robust to other load on a shared machine);
// target (DESIGN §5): bridged ≥ 85% of bare.
// Run: pnpm bench http   (or: pnpm build && node bench/http.bench.mjs)
// The server of each variant runs in its own process; autocannon runs here.
import { spawn } from "node:child_process";
import { createRequire } from "node:module";
import { fileURLToPath, pathToFileURL } from "node:url";

const self = fileURLToPath(import.meta.url);
const root = new URL("../", import.meta.url);

/** Imports `specifier` as packages/<pkg> sees it (frameworks are the bridges' dependencies). */
const from = (pkg, specifier) =>
  import(
    pathToFileURL(createRequire(new URL(`packages/${pkg}/package.json`, root)).resolve(specifier))
      .href
  );
const FRAMEWORKS = ["express", "fastify", "nestjs-express", "nestjs-fastify"];
const DURATION_SECONDS = Number(process.env.BENCH_DURATION ?? 5);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const CONNECTIONS = 50;
// bare: no bridge; context: bridge + req.nervaCtx, agent called directly; bridge: + handle().
const VARIANTS = ["bare", "context", "bridge"];

// ---------------------------------------------------------------------------------------------
// Server side: `node http.bench.mjs --serve <framework> <bare|bridge>` prints its URL.

/** The agent both variants run: the bare route calls it directly, the bridge via handle(). */
const agent = async (input) => `Processed: ${input.message}`;

async function makeHandle() {
  const core = await import("@nerva/core");
  const runtime = new core.InProcessRuntime({ timeoutSeconds: 30 });
  runtime.register("my_agent", agent);
  if (typeof core.Orchestrator === "function" && typeof core.RuleRouter === "function") {
    try {
      const orchestrator = new core.Orchestrator({
        router: new core.RuleRouter({ rules: [], defaultHandler: "my_agent" }),
        runtime,
      });
      await orchestrator.handle("warm-up", core.ExecContext.create({ userId: "bench" }));
      return {
        kind: "orchestrator.handle",
        handle: async (m, ctx) => ({ output: (await orchestrator.handle(m, ctx)).text }),
      };
    } catch (err) {
      console.error(
        `[http.bench] Orchestrator unusable here (${err.message}); using runtime.invoke`,
      );
    }
  }
  return {
    kind: "runtime.invoke",
    handle: (message, ctx) => runtime.invoke("my_agent", { message }, ctx),
  };
}

/** Stands in for the app's auth layer (same cost in both variants). */
const authStub = (req) => {
  req.user = { id: "bench-user", roles: ["member"] };
};

async function serveExpress(variant, handle) {
  const { default: express } = await from("express", "express");
  const app = express();
  app.use(express.json());
  app.use((req, _res, next) => {
    authStub(req);
    next();
  });
  if (variant === "bare") {
    app.post("/chat", async (req, res) => {
      res.json({ output: await agent({ message: req.body.message }), userId: req.user.id });
    });
  } else {
    const { nervaMiddleware, nervaErrorHandler } = await from("express", "@nerva/express");
    app.use(nervaMiddleware());
    app.post("/chat", async (req, res) => {
      const ctx = req.nervaCtx;
      const output =
        variant === "context"
          ? await agent({ message: req.body.message })
          : (await handle(req.body.message, ctx)).output;
      res.json({ output, userId: ctx.userId });
    });
    app.use(nervaErrorHandler());
  }
  return new Promise((resolve) => {
    const server = app.listen(0, "127.0.0.1", () => resolve(server.address().port));
  });
}

async function serveFastify(variant, handle) {
  const { default: Fastify } = await from("fastify", "fastify");
  const app = Fastify();
  app.addHook("onRequest", (req, _reply, done) => {
    authStub(req);
    done();
  });
  if (variant === "bare") {
    app.post("/chat", async (req) => ({
      output: await agent({ message: req.body.message }),
      userId: req.user.id,
    }));
  } else {
    const { nervaPlugin } = await from("fastify", "@nerva/fastify");
    await app.register(nervaPlugin);
    app.post("/chat", async (req) => {
      const ctx = req.nervaCtx;
      const output =
        variant === "context"
          ? await agent({ message: req.body.message })
          : (await handle(req.body.message, ctx)).output;
      return { output, userId: ctx.userId };
    });
  }
  await app.listen({ port: 0, host: "127.0.0.1" });
  return app.server.address().port;
}

async function serveNest(platform, variant, handle) {
  await from("nestjs", "reflect-metadata");
  const common = await from("nestjs", "@nestjs/common");
  const { NestFactory } = await from("nestjs", "@nestjs/core");
  const nerva = await from("nestjs", "@nerva/nestjs");
  const { Body, Controller, Module, Post, Injectable, UseGuards, createParamDecorator } = common;
  const decorate = (decorators, target, key, desc) =>
    Reflect.decorate(decorators, target, key, desc);
  const param = (index, decorator) => (target, key) => decorator(target, key, index);

  // A guard standing in for the app's auth (Nest's place for it), in both variants.
  class AuthGuard {
    canActivate(context) {
      authStub(context.switchToHttp().getRequest());
      return true;
    }
  }
  decorate([Injectable()], AuthGuard);
  const User = createParamDecorator((_d, context) => context.switchToHttp().getRequest().user);

  class ChatController {
    async chat(body, user, ctx) {
      if (variant === "bare")
        return { output: await agent({ message: body.message }), userId: user.id };
      const output =
        variant === "context"
          ? await agent({ message: body.message })
          : (await handle(body.message, ctx)).output;
      return { output, userId: ctx.userId };
    }
  }
  const desc = Object.getOwnPropertyDescriptor(ChatController.prototype, "chat");
  const params = [param(0, Body()), param(1, User())];
  if (variant !== "bare") params.push(param(2, nerva.NervaCtx()));
  decorate([Post("chat"), UseGuards(AuthGuard), ...params], ChatController.prototype, "chat", desc);
  decorate([Controller()], ChatController);

  class AppModule {}
  decorate(
    [
      Module({
        imports: variant === "bare" ? [] : [nerva.NervaModule.forRoot({})],
        controllers: [ChatController],
        providers: [AuthGuard],
      }),
    ],
    AppModule,
  );
  let adapter;
  if (platform === "fastify") {
    const { FastifyAdapter } = await from("nestjs", "@nestjs/platform-fastify");
    adapter = new FastifyAdapter();
  } else {
    const { ExpressAdapter } = await from("nestjs", "@nestjs/platform-express");
    adapter = new ExpressAdapter();
  }
  const app = await NestFactory.create(AppModule, adapter, { logger: false });
  await app.listen(0, "127.0.0.1");
  return app.getHttpServer().address().port;
}

async function serve(framework, variant) {
  const { kind, handle } = await makeHandle();
  let port;
  if (framework === "express") port = await serveExpress(variant, handle);
  else if (framework === "fastify") port = await serveFastify(variant, handle);
  else port = await serveNest(framework.slice("nestjs-".length), variant, handle);
  // The load side asks for this process's CPU time around each run (CPU µs per request is far
  // less sensitive than req/s to other load on a shared machine).
  process.on("message", (m) => {
    if (m === "cpu") process.send(process.cpuUsage());
  });
  console.log(JSON.stringify({ port, kind }));
}

// ---------------------------------------------------------------------------------------------
// Load side.

async function start(framework, variant) {
  const child = spawn(process.execPath, [self, "--serve", framework, variant], {
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

/** Requests/s and server CPU µs per request of one autocannon run against `server`. */
async function measure(server, seconds) {
  const cpuBefore = await cpuOf(server.child);
  const { rps, total } = await load(server.port, seconds);
  const cpuAfter = await cpuOf(server.child);
  return { rps, cpuUs: (cpuAfter - cpuBefore) / total };
}

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

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function main() {
  const wanted = (process.env.BENCH_FRAMEWORKS ?? FRAMEWORKS.join(",")).split(",");
  const result = {
    bench: "http",
    connections: CONNECTIONS,
    duration_seconds: DURATION_SECONDS,
    rounds: ROUNDS,
  };
  for (const framework of FRAMEWORKS.filter((f) => wanted.includes(f))) {
    const servers = {};
    for (const variant of VARIANTS) servers[variant] = await start(framework, variant);
    try {
      // Warm both (JIT, connection pools), then alternate rounds so drift hits both alike.
      for (const s of Object.values(servers)) await load(s.port, 2);
      const runs = Object.fromEntries(VARIANTS.map((v) => [v, []]));
      for (let r = 0; r < ROUNDS; r++) {
        for (const variant of VARIANTS) {
          runs[variant].push(await measure(servers[variant], DURATION_SECONDS));
        }
      }
      const rps = (v) => median(runs[v].map((x) => x.rps));
      const cpu = (v) => median(runs[v].map((x) => x.cpuUs));
      result[framework] = {
        bare_rps: Math.round(rps("bare")),
        bridge_rps: Math.round(rps("bridge")),
        rps_ratio: +(rps("bridge") / rps("bare")).toFixed(3),
        bare_cpu_us_per_request: +cpu("bare").toFixed(1),
        bridge_cpu_us_per_request: +cpu("bridge").toFixed(1),
        cpu_ratio: +(cpu("bare") / cpu("bridge")).toFixed(3),
        context_only_cpu_us_per_request: +cpu("context").toFixed(1),
        handle: servers.bridge.kind,
      };
      const f = result[framework];
      console.error(
        `${framework}: bare ${f.bare_rps} req/s (${f.bare_cpu_us_per_request} µs CPU/req), ` +
          `bridge ${f.bridge_rps} req/s (${f.bridge_cpu_us_per_request} µs CPU/req): ` +
          `${(f.rps_ratio * 100).toFixed(1)}% of bare req/s, ${(f.cpu_ratio * 100).toFixed(1)}% of bare by CPU`,
      );
    } finally {
      for (const s of Object.values(servers)) s.child.kill("SIGKILL");
    }
  }
  console.log(JSON.stringify(result));
}

if (process.argv[2] === "--serve") {
  // Exit cleanly on SIGINT so `node --cpu-prof` can write its profile.
  process.on("SIGINT", () => process.exit(0));
  await serve(process.argv[3], process.argv[4]);
} else {
  await main();
}
