import type { ExecContext } from "@nerva/core";
import { jsonBodyOf, type JsonBodyRequest } from "@nerva/core/http";
import { NervaCtx, sendSSE } from "@nerva/nestjs";
import { Controller, Get, Inject, Param, Post, Req, Res, UseGuards } from "@nestjs/common";
import type { ExampleRoutes, RouteAnswer } from "@nerva/example-kit";
import { JwtAuthGuard } from "./jwt-auth.guard.js";

/** Injection token of the example service's route bodies ({@link ExampleRoutes}). */
export const EXAMPLE_ROUTES = Symbol("EXAMPLE_ROUTES");

/** Express's res and Fastify's reply both have status(): this works on either platform. */
type StatusSetter = { status(code: number): unknown };

function answer(res: StatusSetter, { status, body }: RouteAnswer) {
  res.status(status);
  return body;
}

/**
 * Approvals (`POST /approvals/:id`, `POST /chat/resume`) and durable runs (`/runs`) for
 * authenticated users, through the example service's route bodies.
 */
@Controller()
@UseGuards(JwtAuthGuard)
export class ServiceController {
  constructor(@Inject(EXAMPLE_ROUTES) private readonly routes: ExampleRoutes) {}

  @Post("chat/resume")
  async resume(
    @Req() request: JsonBodyRequest,
    @NervaCtx() ctx: ExecContext,
    @Res({ passthrough: true }) res: StatusSetter,
  ) {
    return answer(res, await this.routes.resume(jsonBodyOf(request), ctx));
  }

  @Post("approvals/:id")
  async decide(
    @Param("id") id: string,
    @Req() request: JsonBodyRequest,
    @NervaCtx() ctx: ExecContext,
    @Res({ passthrough: true }) res: StatusSetter,
  ) {
    return answer(res, await this.routes.decide(id, jsonBodyOf(request), ctx));
  }

  @Post("runs")
  async start(
    @Req() request: JsonBodyRequest,
    @NervaCtx() ctx: ExecContext,
    @Res({ passthrough: true }) res: StatusSetter,
  ) {
    return answer(res, await this.routes.startRun(jsonBodyOf(request), ctx));
  }

  @Get("runs/:id")
  async get(
    @Param("id") id: string,
    @NervaCtx() ctx: ExecContext,
    @Res({ passthrough: true }) res: StatusSetter,
  ) {
    return answer(res, await this.routes.getRun(id, ctx));
  }

  /** Written by the bridge on the platform's response, from after the `Last-Event-ID`. */
  @Get("runs/:id/events")
  async events(
    @Param("id") id: string,
    @Req() request: JsonBodyRequest,
    @NervaCtx() ctx: ExecContext,
    @Res() res: unknown,
  ) {
    const { source, options } = await this.routes.runEvents(id, request, ctx);
    return sendSSE(res, source, null, options);
  }

  @Post("runs/:id/cancel")
  async cancel(
    @Param("id") id: string,
    @NervaCtx() ctx: ExecContext,
    @Res({ passthrough: true }) res: StatusSetter,
  ) {
    return answer(res, await this.routes.cancelRun(id, ctx));
  }
}
