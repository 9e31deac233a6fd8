// An Express 5 app in TypeScript compiled to ES modules: prints what its routes answered, as JSON.
import type { AddressInfo } from "node:net";
import express from "express";
import { ExecContext, InProcessRuntime, Orchestrator, RuleRouter } from "@nerva/core";
import { nervaErrorHandler, nervaMiddleware, sendSSE } from "@nerva/express";

// Fails to compile if req.nervaCtx were `any` (a declaration that did not resolve).
type IsAny<T> = 0 extends 1 & T ? true : false;
export const typed: IsAny<express.Request["nervaCtx"]> = false;

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

const app = express();
app.use(nervaMiddleware({ requireAuth: true, timeoutSeconds: 30 }));
app.use((req, _res, next) => {
  const name = /^User (\w+)$/.exec(req.headers.authorization ?? "")?.[1];
  if (name !== undefined) Object.assign(req, { user: { sub: name } });
  next();
});
app.get("/me", async (req, res) => {
  const ctx: ExecContext = req.nervaCtx;
  const result = await orchestrator.handle("who am I", ctx);
  res.json({ user: ctx.userId, text: result.text });
});
app.get("/story", (req, res) =>
  sendSSE(res, orchestrator.stream("a story", req.nervaCtx), req.nervaCtx),
);
app.use(nervaErrorHandler());

const server = app.listen(0, "127.0.0.1", async () => {
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
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
  server.close();
});
