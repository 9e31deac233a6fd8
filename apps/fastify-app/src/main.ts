import { createOrchestrator } from "./agents.js";
import { createApp } from "./app.js";
import { createAuth } from "./auth.js";

// Embedded defaults: in-process agents, in-memory memory, a local JWT secret. PORT=0 picks a free port.
const port = Number(process.env.PORT ?? 3000);
const host = process.env.HOST ?? "127.0.0.1";
const { orchestrator, close } = createOrchestrator();
const app = await createApp({ orchestrator, auth: createAuth(process.env.JWT_SECRET) });
const url = await app.listen({ port, host });

console.log(`Nerva Fastify example listening on ${url}`);
console.log(
  `  TOKEN=$(curl -s -X POST ${url}/token -H 'content-type: application/json' -d '{"user":"alice"}' | node -pe 'JSON.parse(require("fs").readFileSync(0)).token')`,
);
console.log(
  `  curl -s -X POST ${url}/chat -H "authorization: Bearer $TOKEN" -H 'content-type: application/json' -d '{"message":"Find me a flight to Lisbon"}'`,
);
console.log(
  `  curl -N -X POST ${url}/chat/stream -H "authorization: Bearer $TOKEN" -H 'content-type: application/json' -d '{"message":"Tell me a story"}'`,
);

for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => {
    void app
      .close()
      .then(close)
      .then(() => process.exit(0));
  });
}
