import type { ExecContext, Orchestrator } from "@nerva/core";
import { InjectOrchestrator, NervaCtx, sendSSE } from "@nerva/nestjs";
import { httpStatusOfResult, jsonBodyOf, type JsonBodyRequest } from "@nerva/core/http";
import { Controller, HttpCode, Post, Req, Res, UseGuards } from "@nestjs/common";
import { chatRequestOf } from "@nerva/example-kit";
import { JwtAuthGuard } from "./jwt-auth.guard.js";

/** `POST /chat` (JSON) and `POST /chat/stream` (Server-Sent Events) for authenticated users. */
@Controller()
@UseGuards(JwtAuthGuard)
export class ChatController {
  constructor(@InjectOrchestrator() private readonly orchestrator: Orchestrator) {}

  @Post("chat")
  @HttpCode(200)
  async chat(
    @Req() request: JsonBodyRequest,
    @NervaCtx() ctx: ExecContext,
    // Express's res and Fastify's reply both have status(): this works on either platform.
    @Res({ passthrough: true }) res: { status(code: number): unknown },
  ) {
    const { message } = chatRequestOf(jsonBodyOf(request));
    const response = await this.orchestrator.handle(message, ctx);
    res.status(httpStatusOfResult(response));
    return { ...response, requestId: ctx.requestId };
  }

  /** Written by the bridge on the platform's response: the producer waits for a slow client. */
  @Post("chat/stream")
  stream(@Req() request: JsonBodyRequest, @NervaCtx() ctx: ExecContext, @Res() res: unknown) {
    const { message } = chatRequestOf(jsonBodyOf(request));
    return sendSSE(res, this.orchestrator.stream(message, ctx), ctx);
  }
}
