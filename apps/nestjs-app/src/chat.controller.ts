import type { ExecContext, Orchestrator } from "@nerva/core";
import { InjectOrchestrator, NervaCtx, httpStatusOfResult, toSseObservable } from "@nerva/nestjs";
import {
  Body,
  Controller,
  HttpCode,
  Post,
  RequestMethod,
  Res,
  Sse,
  UseGuards,
  type MessageEvent,
} from "@nestjs/common";
import type { Observable } from "rxjs";
import { JwtAuthGuard } from "./jwt-auth.guard.js";

/** `POST /chat` (JSON) and `POST /chat/stream` (Server-Sent Events) for authenticated users. */
@Controller()
@UseGuards(JwtAuthGuard)
export class ChatController {
  constructor(@InjectOrchestrator() private readonly orchestrator: Orchestrator) {}

  @Post("chat")
  @HttpCode(200)
  async chat(
    @Body() body: { message: string },
    @NervaCtx() ctx: ExecContext,
    // Express's res and Fastify's reply both have status(): this works on either platform.
    @Res({ passthrough: true }) res: { status(code: number): unknown },
  ) {
    const response = await this.orchestrator.handle(body?.message, ctx);
    res.status(httpStatusOfResult(response));
    return { ...response, requestId: ctx.requestId };
  }

  @Sse("chat/stream", { method: RequestMethod.POST })
  stream(
    @Body() body: { message: string },
    @NervaCtx() ctx: ExecContext,
  ): Observable<MessageEvent> {
    return toSseObservable(this.orchestrator.stream(body?.message, ctx), ctx);
  }
}
