import "reflect-metadata";
import type { IncomingMessage, ServerResponse } from "node:http";
import { createHttpBridge, getRequestScope } from "@nerva/core/http";
import { RequestMethod, type MiddlewareConsumer } from "@nestjs/common";
import type { HttpAdapterHost } from "@nestjs/core";
import { describe, expect, it } from "vitest";
import { NervaMiddleware } from "./nerva.middleware.js";
import { NervaModule } from "./nerva.module.js";

describe("NervaModule.configure on a platform other than Express or Fastify", () => {
  it("falls back to a Nest middleware for every route", () => {
    const applied: unknown[] = [];
    const consumer = {
      apply: (...middleware: unknown[]) => {
        applied.push(...middleware);
        return { forRoutes: (...routes: unknown[]) => (applied.push(...routes), consumer) };
      },
    } as unknown as MiddlewareConsumer;
    const host = { httpAdapter: { getType: () => "h3" } } as unknown as HttpAdapterHost;
    const middleware = new NervaMiddleware(createHttpBridge());
    new NervaModule(host, middleware).configure(consumer);
    expect(applied).toEqual([NervaMiddleware, { path: "{*path}", method: RequestMethod.ALL }]);
  });

  it("the middleware starts a scope the decorator can find", () => {
    const middleware = new NervaMiddleware(createHttpBridge());
    const req = { headers: {} } as IncomingMessage;
    const res = {
      headersSent: false,
      writableFinished: false,
      destroyed: false,
      headers: {} as Record<string, string>,
      setHeader(name: string, value: string) {
        this.headers[name] = value;
      },
      on: () => undefined,
    };
    let nextCalled = false;
    middleware.use(req, res as unknown as ServerResponse, () => (nextCalled = true));
    expect(nextCalled).toBe(true);
    const scope = getRequestScope(req);
    expect(scope?.requestId).toBe(res.headers["x-request-id"]);
  });
});
