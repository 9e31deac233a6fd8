// nervaNotFound(): a request no route took gets the Nerva JSON 404, over real HTTP.
import type { AddressInfo } from "node:net";
import type { Server } from "node:http";
import express from "express";
import { afterAll, beforeAll, expect, it } from "vitest";
import { nervaErrorHandler, nervaMiddleware, nervaNotFound } from "./index.js";

let server: Server;
let url: string;
beforeAll(async () => {
  const app = express();
  app.use(nervaMiddleware());
  app.get("/known", (_req, res) => void res.json({ ok: true }));
  app.use(nervaNotFound());
  app.use(nervaErrorHandler());
  server = app.listen(0, "127.0.0.1");
  await new Promise((r) => server.once("listening", r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise((r) => server.close(r)));

it("answers an unmatched route 404 with the JSON error body and the request id", async () => {
  const res = await fetch(`${url}/nowhere/${"x".repeat(300)}?q=1`, { method: "DELETE" });
  expect(res.status).toBe(404);
  expect(res.headers.get("content-type")).toMatch(/^application\/json/);
  const body = (await res.json()) as {
    error: { code: string; message: string; requestId: string };
  };
  expect(body.error.code).toBe("NOT_FOUND");
  expect(body.error.message).toMatch(/^No route for DELETE \/nowhere\/x+…\.$/);
  expect(body.error.message.length).toBeLessThan(260);
  expect(body.error.requestId).toBe(res.headers.get("x-request-id"));
  const known = await fetch(`${url}/known`);
  expect(known.status).toBe(200);
  expect(await known.json()).toEqual({ ok: true });
});
