/**
 * Prints where an example app listens, which model its concierge uses (when given), where its
 * state lives (when given), and `curl` commands to try it: get a token, chat, stream a story,
 * start a durable run.
 *
 * @example
 * printBanner("Nerva Express example", "http://127.0.0.1:3000", "scripted", "embedded");
 */
export function printBanner(title: string, url: string, model?: string, state?: string): void {
  console.log(`${title} listening on ${url}`);
  if (model !== undefined) console.log(`  model: ${model}`);
  if (state !== undefined) {
    console.log(
      state === "redis"
        ? "  state: Redis (REDIS_URL); this replica also runs a worker"
        : `  state: ${state === "memory" ? "embedded" : state}, this process only (set REDIS_URL for several replicas)`,
    );
  }
  console.log(
    `  TOKEN=$(curl -s -X POST ${url}/token -H 'content-type: application/json' -d '{"user":"alice"}' | node -pe 'JSON.parse(require("fs").readFileSync(0)).token')`,
  );
  console.log(
    `  curl -s -X POST ${url}/chat -H "authorization: Bearer $TOKEN" -H 'content-type: application/json' -d '{"message":"Find me a flight to Lisbon"}'`,
  );
  console.log(
    `  curl -N -X POST ${url}/chat/stream -H "authorization: Bearer $TOKEN" -H 'content-type: application/json' -d '{"message":"Tell me a story"}'`,
  );
  console.log(
    `  curl -s -X POST ${url}/runs -H "authorization: Bearer $TOKEN" -H 'content-type: application/json' -d '{"message":"count to 20"}'   # then GET /runs/<id>/events`,
  );
}

/**
 * On SIGINT or SIGTERM, runs `steps` one after the other (stop the server, then the agents) and
 * exits with status 0.
 *
 * @example
 * stopOnSignals(() => app.close(), close);
 */
export function stopOnSignals(...steps: (() => unknown)[]): void {
  const stop = async () => {
    for (const step of steps) await step();
    process.exit(0);
  };
  for (const signal of ["SIGINT", "SIGTERM"] as const) process.once(signal, () => void stop());
}
