// Type-checked by several TypeScript versions under several module settings (see tsconfig.*.json).
import express from "express";
import { ExecContext, InProcessRuntime, NervaError, isNervaError } from "@nerva/core";
import { jsonBodyOf } from "@nerva/core/http";
import { nervaErrorHandler, nervaMiddleware } from "@nerva/express";

// Each line fails to compile if its type were `any` (a declaration that did not resolve, which
// skipLibCheck would otherwise hide).
type IsAny<T> = 0 extends 1 & T ? true : false;
export const ctxTyped: IsAny<express.Request["nervaCtx"]> = false;
export const bodyTyped: IsAny<ReturnType<typeof jsonBodyOf>> = false;
export const middlewareTyped: IsAny<typeof nervaMiddleware> = false;

const runtime = new InProcessRuntime();
runtime.register("echo", async (input, ctx: ExecContext) => `${ctx.userId}: ${input.message}`);

export const app = express();
app.use(nervaMiddleware({ requireAuth: true }));
app.get("/me", (req, res) => {
  const ctx: ExecContext = req.nervaCtx;
  res.json({ user: ctx.userId });
});
app.use(nervaErrorHandler());

export function code(err: unknown): string | null {
  if (err instanceof NervaError) return err.code;
  return isNervaError(err) ? err.code : null;
}
