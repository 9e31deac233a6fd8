// `pnpm trace-ui`: runs the Express example app (apps/express-app, built) with its trace viewer on
// (NERVA_TRACE_UI=1), sends it a few requests worth looking at (a tool call, a delegation, a
// failing request, a streamed answer) and prints the viewer's address. Ctrl-C stops the app.
// PORT picks the app's port (default 3000; 0: a free one).
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const main = join(root, "apps/express-app/dist/main.js");
if (!existsSync(main)) {
  console.error(`${main} is missing: run \`pnpm build\` first (pnpm trace-ui does).`);
  process.exit(2);
}

const app = spawn(process.execPath, [main], {
  cwd: join(root, "apps/express-app"),
  env: { ...process.env, NERVA_TRACE_UI: "1", PORT: process.env.PORT ?? "3000" },
  stdio: ["ignore", "pipe", "inherit"],
});
for (const signal of ["SIGINT", "SIGTERM"]) process.once(signal, () => app.kill(signal));
app.once("exit", (code, signal) => process.exit(code ?? (signal === null ? 0 : 1)));

const url = await new Promise((resolve, reject) => {
  let out = "";
  const onData = (chunk) => {
    out += chunk.toString();
    const found = /listening on (http:\/\/\S+)/.exec(out);
    if (found !== null) {
      app.stdout.off("data", onData);
      process.stdout.write(out);
      app.stdout.pipe(process.stdout);
      resolve(found[1]);
    }
  };
  app.stdout.on("data", onData);
  app.once("exit", () => reject(new Error(`the example app stopped before listening:\n${out}`)));
});

async function post(path, body, token) {
  const res = await fetch(`${url}${path}`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      ...(token === undefined ? {} : { authorization: `Bearer ${token}` }),
    },
    body: JSON.stringify(body),
  });
  await res.text(); // read whole: a streamed answer is one trace once it has ended
  return res;
}

const tokenOf = async (user) =>
  (
    await (
      await fetch(`${url}/token`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ user }),
      })
    ).json()
  ).token;

const alice = await tokenOf("alice");
const bob = await tokenOf("bob");
const samples = [
  [alice, "/chat", "Find me a flight to Lisbon", "a tool call"],
  [alice, "/chat", "Plan a trip to Rome", "a delegation, with a tool call under it"],
  [bob, "/chat", "Find me a flight to Atlantis", "a failing tool call"],
  [bob, "/chat/stream", "Tell me a story", "a streamed answer"],
];
console.log("\nSample requests:");
for (const [token, path, message, what] of samples) {
  const res = await post(path, { message }, token);
  console.log(`  ${res.status} POST ${path} "${message}" (${what})`);
}
console.log(`\nTrace viewer: ${url}/_nerva/traces (Ctrl-C stops the app)`);
