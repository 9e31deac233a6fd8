import "reflect-metadata";
import type { IncomingMessage, ServerResponse } from "node:http";
import { ErrorCode, NervaError } from "@nerva/core";
import { HttpBridge, getRequestScope, setRequestScope } from "@nerva/core/http";
import { RequestMethod, type MiddlewareConsumer } from "@nestjs/common";
import type { HttpAdapterHost } from "@nestjs/core";
import { ExecutionContextHost } from "@nestjs/core/helpers/execution-context-host.js";
import { nervaContextOf } from "./nerva-ctx.decorator.js";
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
    const middleware = new NervaMiddleware(new HttpBridge());
    new NervaModule(host, middleware).configure(consumer);
    expect(applied).toEqual([NervaMiddleware, { path: "{*path}", method: RequestMethod.ALL }]);
  });

  it("the middleware starts a scope the decorator can find", () => {
    const middleware = new NervaMiddleware(new HttpBridge());
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

describe("nervaContextOf outside an HTTP route", () => {
  const fakeResponse = () => ({
    headersSent: false,
    writableFinished: false,
    destroyed: false,
    setHeader: () => undefined,
    on: () => undefined,
  });

  it.each(["rpc", "ws"])(
    "throws INTERNAL naming the %s context instead of reading a request",
    (type) => {
      const context = new ExecutionContextHost([{ data: 1 }, {}]);
      context.setType(type);
      let error: unknown;
      try {
        nervaContextOf(context);
      } catch (err) {
        error = err;
      }
      expect(error).toBeInstanceOf(NervaError);
      expect((error as NervaError).code).toBe(ErrorCode.INTERNAL);
      expect((error as NervaError).message).toContain(`this ${type} execution context`);
    },
  );

  it("reads the request a GraphQL context carries", () => {
    const req = { headers: {}, user: { id: "gql-user" } } as unknown as IncomingMessage;
    setRequestScope(req, new HttpBridge().begin(req, fakeResponse() as unknown as ServerResponse));
    const context = new ExecutionContextHost([{}, {}, { req }, {}]);
    context.setType("graphql");
    expect(nervaContextOf(context).userId).toBe("gql-user");
    const bare = new ExecutionContextHost([{}, {}, {}, {}]);
    bare.setType("graphql");
    expect(() => nervaContextOf(bare)).toThrow(/return \{ req \}/);
  });
});
