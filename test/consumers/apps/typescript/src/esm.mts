// The same package from an ES module (nodenext and bundler only): the "import" types.
import type express from "express";
import { ExecContext } from "@nerva/core";
import { nervaMiddleware } from "@nerva/express";

type IsAny<T> = 0 extends 1 & T ? true : false;
export const ctxTyped: IsAny<express.Request["nervaCtx"]> = false;
export const middleware = nervaMiddleware({ timeoutSeconds: 5 });
export const ctx: ExecContext = ExecContext.create({ userId: "alice" });
