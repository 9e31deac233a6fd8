// The AG-UI route on a real Fastify server (port 0), mounted with nervaAgUi and checked by the
// shared suite with @ag-ui/client's own HttpAgent.
import type { AddressInfo } from "node:net";
import { describeAgUiBridge } from "@nerva/core/testing";
import Fastify from "fastify";
import { nervaAgUi, nervaPlugin } from "./index.js";

describeAgUiBridge("Fastify", async ({ agent, graph }) => {
  const app = Fastify();
  await app.register(nervaPlugin, {
    resolve: (request) => ({ userId: (request.headers["x-test-user"] as string) ?? null }),
  });
  await app.register(nervaAgUi(agent));
  await app.register(nervaAgUi(graph, { path: "/ag-ui/graph" }));
  await app.listen({ port: 0, host: "127.0.0.1" });
  return {
    url: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`,
    close: () => app.close(),
  };
});
