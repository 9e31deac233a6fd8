import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describeExampleApp, describeExampleMain } from "@nerva/example-kit/testing";
import { createApp } from "./app.js";

describeExampleApp("Fastify example app", {
  start: async (deps) => {
    const app = await createApp(deps);
    return { url: await app.listen({ port: 0, host: "127.0.0.1" }), close: () => app.close() };
  },
});

describeExampleMain("Fastify example main", {
  appDir: join(dirname(fileURLToPath(import.meta.url)), ".."),
  nodeArgs: ["--conditions=@nerva/source", "--import", "tsx", "src/main.ts"],
  name: "nerva-fastify-example",
  runs: [{}, { NERVA_TRACE_UI: "1" }],
});
