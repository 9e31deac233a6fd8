// An Express 4 app in plain CommonJS JavaScript: prints what its routes answered, as JSON.
const express = require("express");
const { InProcessRuntime, Orchestrator, RuleRouter } = require("@nerva/core");
const { nervaErrorHandler, nervaMiddleware, sendSSE } = require("@nerva/express");

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
  const name = /^User (\w+)$/.exec(req.headers.authorization || "");
  if (name) req.user = { sub: name[1] };
  next();
});
app.get("/me", async (req, res, next) => {
  try {
    const result = await orchestrator.handle("who am I", req.nervaCtx);
    res.json({ user: req.nervaCtx.userId, text: result.text });
  } catch (err) {
    next(err);
  }
});
app.get("/story", (req, res) =>
  sendSSE(res, orchestrator.stream("a story", req.nervaCtx), req.nervaCtx),
);
app.use(nervaErrorHandler());

const server = app.listen(0, "127.0.0.1", async () => {
  const url = `http://127.0.0.1:${server.address().port}`;
  const auth = { authorization: "User alice" };
  const me = await fetch(`${url}/me`, { headers: auth });
  const anonymous = await fetch(`${url}/me`);
  const story = await fetch(`${url}/story`, { headers: auth });
  console.log(
    JSON.stringify({
      express: require("express/package.json").version,
      me: { status: me.status, body: await me.json() },
      anonymous: { status: anonymous.status, body: await anonymous.json() },
      story: { type: story.headers.get("content-type"), body: await story.text() },
    }),
  );
  server.close();
});
