import "reflect-metadata";
import { NestFactory } from "@nestjs/core";
import { ExpressAdapter } from "@nestjs/platform-express";
import { FastifyAdapter } from "@nestjs/platform-fastify";
import { createOrchestrator } from "./agents.js";
import { createAppModule } from "./app.module.js";
import { createAuth } from "./auth.js";

// Embedded defaults: in-process agents, in-memory memory, a local JWT secret. PORT=0 picks a free
// port; PLATFORM=fastify runs on Nest's Fastify adapter instead of Express.
const port = Number(process.env.PORT ?? 3000);
const host = process.env.HOST ?? "127.0.0.1";
const platform = process.env.PLATFORM === "fastify" ? "fastify" : "express";
const { orchestrator, close } = createOrchestrator();
const AppModule = createAppModule({ orchestrator, auth: createAuth(process.env.JWT_SECRET) });
const app = await NestFactory.create(
  AppModule,
  platform === "fastify" ? new FastifyAdapter() : new ExpressAdapter(),
  { logger: ["error", "warn"] },
);
await app.listen(port, host);
const url = (await app.getUrl()).replace("[::1]", "localhost");

console.log(`Nerva NestJS example (${platform}) listening on ${url}`);
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
