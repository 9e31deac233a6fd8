// A Fastify app as an ES module: prints what its routes answered, as JSON.
import Fastify from "fastify";
import { InProcessRuntime, Orchestrator, RuleRouter } from "@nerva/core";
import { nervaPlugin, sendSSE } from "@nerva/fastify";

const runtime = new InProcessRuntime();
runtime.register("echo", async (input, ctx) => `${ctx.userId} asked: ${input.message}`);
runtime.register("story", async function* () {
  yield "Once ";
  yield "upon a time.";
});
const orchestrator = new Orchestrator({
  router: new RuleRouter({
    rules: [{ handler: "story", keywords: ["story"] }],
    defaultHandler: "echo",
  }),
  runtime,
});

const app = Fastify();
await app.register(nervaPlugin, { requireAuth: true, timeoutSeconds: 30 });
app.decorateRequest("user", null);
app.addHook("preHandler", async (request) => {
  const name = /^User (\w+)$/.exec(request.headers.authorization ?? "")?.[1];
  if (name !== undefined) request.user = { sub: name };
});
app.get("/me", async (request) => {
  const result = await orchestrator.handle("who am I", request.nervaCtx);
  return { user: request.nervaCtx.userId, text: result.text };
});
app.get("/story", (request, reply) =>
  sendSSE(reply, orchestrator.stream("a story", request.nervaCtx), request.nervaCtx),
);

const url = await app.listen({ port: 0, host: "127.0.0.1" });
const auth = { authorization: "User alice" };
const me = await fetch(`${url}/me`, { headers: auth });
const anonymous = await fetch(`${url}/me`);
const story = await fetch(`${url}/story`, { headers: auth });
console.log(
  JSON.stringify({
    me: { status: me.status, body: await me.json() },
    anonymous: { status: anonymous.status, body: await anonymous.json() },
    story: { type: story.headers.get("content-type"), body: await story.text() },
  }),
);
await app.close();
