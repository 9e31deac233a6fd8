import { Controller, Get, Res, UseGuards } from "@nestjs/common";
import { ExecContext, Orchestrator } from "@nerva/core";
import { InjectOrchestrator, NervaCtx, sendSSE } from "@nerva/nestjs";
import { HeaderGuard } from "./header.guard";

@Controller()
@UseGuards(HeaderGuard)
export class AppController {
  constructor(@InjectOrchestrator() private readonly orchestrator: Orchestrator) {}

  @Get("me")
  async me(@NervaCtx() ctx: ExecContext) {
    const result = await this.orchestrator.handle("who am I", ctx);
    return { user: ctx.userId, text: result.text };
  }

  @Get("story")
  story(@NervaCtx() ctx: ExecContext, @Res() res: unknown) {
    return sendSSE(res, this.orchestrator.stream("a story", ctx), ctx);
  }
}
