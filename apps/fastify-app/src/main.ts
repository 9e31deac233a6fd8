import {
  createAuth,
  createExampleOrchestrator,
  printBanner,
  stopOnSignals,
} from "@nerva/example-kit";
import { createApp } from "./app.js";

// Embedded defaults: in-process agents, a scripted model unless OPENAI_API_KEY or ANTHROPIC_API_KEY
// is set, in-memory memory, a local JWT secret. PORT=0 picks a free port.
const port = Number(process.env.PORT ?? 3000);
const host = process.env.HOST ?? "127.0.0.1";
const { orchestrator, close, model } = await createExampleOrchestrator();
const app = await createApp({ orchestrator, auth: createAuth(process.env.JWT_SECRET) });
const url = await app.listen({ port, host });

printBanner("Nerva Fastify example", url, model);

stopOnSignals(() => app.close(), close);
