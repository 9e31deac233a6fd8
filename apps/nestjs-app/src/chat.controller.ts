import type { ExecContext, Orchestrator } from "@nerva/core";
import { InjectOrchestrator, NervaCtx, sendSSE } from "@nerva/nestjs";
import { jsonBodyOf, type JsonBodyRequest } from "@nerva/core/http";
import { Controller, HttpCode, Inject, Post, Req, Res, UseGuards } from "@nestjs/common";
import { chatRequestOf, type ExampleRoutes } from "@nerva/example-kit";
import { JwtAuthGuard } from "./jwt-auth.guard.js";
import { EXAMPLE_ROUTES } from "./service.controller.js";

/** `POST /chat` (JSON) and `POST /chat/stream` (Server-Sent Events) for authenticated users. */
@Controller()
@UseGuards(JwtAuthGuard)
export class ChatController {
  constructor(
    @InjectOrchestrator() private readonly orchestrator: Orchestrator,
    @Inject(EXAMPLE_ROUTES) private readonly routes: ExampleRoutes,
  ) {}

  @Post("chat")
  @HttpCode(200)
  async chat(
    @Req() request: JsonBodyRequest,
    @NervaCtx() ctx: ExecContext,
    // Express's res and Fastify's reply both have status(): this works on either platform.
    @Res({ passthrough: true }) res: { status(code: number): unknown },
  ) {
    const { status, body } = await this.routes.chat(jsonBodyOf(request), ctx);
    res.status(status);
    return body;
  }

  /** Written by the bridge on the platform's response: the producer waits for a slow client. */
  @Post("chat/stream")
  stream(@Req() request: JsonBodyRequest, @NervaCtx() ctx: ExecContext, @Res() res: unknown) {
    const { message } = chatRequestOf(jsonBodyOf(request));
    return sendSSE(res, this.orchestrator.stream(message, ctx), ctx);
  }
}
