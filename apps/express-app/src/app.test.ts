import { once } from "node:events";
import type { AddressInfo } from "node:net";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describeExampleApp, describeExampleMain } from "@nerva/example-kit/testing";
import { createApp } from "./app.js";

describeExampleApp("Express example app", {
  start: async (deps) => {
    const server = createApp(deps).listen(0, "127.0.0.1");
    await once(server, "listening");
    return {
      url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      close: async () => {
        server.closeAllConnections();
        await new Promise((r) => server.close(r));
      },
    };
  },
});

describeExampleMain("Express example main", {
  appDir: join(dirname(fileURLToPath(import.meta.url)), ".."),
  nodeArgs: ["--conditions=@nerva/source", "--import", "tsx", "src/main.ts"],
  name: "nerva-express-example",
  runs: [{}, { NERVA_TRACE_UI: "1" }],
});
