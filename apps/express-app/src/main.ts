import type { AddressInfo } from "node:net";
import { createOrchestrator } from "./agents.js";
import { createApp } from "./app.js";
import { createAuth } from "./auth.js";

// Embedded defaults: in-process agents, in-memory memory, a local JWT secret. PORT=0 picks a free port.
const port = Number(process.env.PORT ?? 3000);
const host = process.env.HOST ?? "127.0.0.1";
const { orchestrator, close } = createOrchestrator();
const app = createApp({ orchestrator, auth: createAuth(process.env.JWT_SECRET) });

const server = app.listen(port, host, () => {
  const url = `http://${host}:${(server.address() as AddressInfo).port}`;
  console.log(`Nerva Express example listening on ${url}`);
  console.log(
    `  TOKEN=$(curl -s -X POST ${url}/token -H 'content-type: application/json' -d '{"user":"alice"}' | node -pe 'JSON.parse(require("fs").readFileSync(0)).token')`,
  );
  console.log(
    `  curl -s -X POST ${url}/chat -H "authorization: Bearer $TOKEN" -H 'content-type: application/json' -d '{"message":"Find me a flight to Lisbon"}'`,
  );
  console.log(
    `  curl -N -X POST ${url}/chat/stream -H "authorization: Bearer $TOKEN" -H 'content-type: application/json' -d '{"message":"Tell me a story"}'`,
  );
});

for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => {
    server.close();
    server.closeAllConnections();
    void close().then(() => process.exit(0));
  });
}
