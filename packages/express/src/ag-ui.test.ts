// The AG-UI route on a real Express server (port 0), mounted with nervaAgUi and checked by the
// shared suite with @ag-ui/client's own HttpAgent.
import { once } from "node:events";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { describeAgUiBridge } from "@nerva/core/testing";
import express from "express";
import { nervaAgUi, nervaErrorHandler, nervaMiddleware } from "./index.js";

describeAgUiBridge("Express", async ({ agent, graph }) => {
  const app = express();
  app.use(nervaMiddleware({ resolve: (req) => ({ userId: req.get("x-test-user") ?? null }) }));
  app.use(express.json());
  app.use(nervaAgUi(agent));
  app.use(nervaAgUi(graph, { path: "/ag-ui/graph" }));
  app.use(nervaErrorHandler());
  const server = http.createServer(app);
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: async () => {
      server.closeAllConnections();
      server.close();
    },
  };
});
