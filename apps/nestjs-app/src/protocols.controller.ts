import type { ExecContext } from "@nerva/core";
import { NervaCtx, chatResponse } from "@nerva/nestjs";
import {
  All,
  Body,
  Controller,
  Get,
  HttpCode,
  Inject,
  Param,
  Post,
  Req,
  Res,
  UseGuards,
} from "@nestjs/common";
import type { ExampleProtocols } from "@nerva/example-kit";
import { JwtAuthGuard } from "./jwt-auth.guard.js";

/** Injection token of the example's protocol endpoints ({@link ExampleProtocols}). */
export const EXAMPLE_PROTOCOLS = Symbol("EXAMPLE_PROTOCOLS");

/**
 * The protocols of frontends and other agents for authenticated users, on either platform:
 * `useChat` (`POST /api/chat`, `GET /api/chat/:id/stream`, `POST /api/chat/:id/stop`), AG-UI's
 * HttpAgent (`POST /ag-ui`) and MCP clients (`/mcp`). `chatResponse` gives the Node response the
 * stream is written to (taken over from Fastify's reply once the checks passed).
 */
@Controller()
@UseGuards(JwtAuthGuard)
export class ProtocolsController {
  constructor(@Inject(EXAMPLE_PROTOCOLS) private readonly protocols: ExampleProtocols) {}

  @Post("api/chat")
  send(@Body() body: unknown, @NervaCtx() ctx: ExecContext, @Res() res: unknown) {
    return this.protocols.chat.send({ body, ctx, ...chatResponse(res) });
  }

  @Get("api/chat/:id/stream")
  resume(
    @Param("id") id: string,
    @Req() req: { headers: Record<string, string> },
    @NervaCtx() ctx: ExecContext,
    @Res() res: unknown,
  ) {
    return this.protocols.chat.resume({
      chatId: id,
      ctx,
      headers: req.headers,
      ...chatResponse(res),
    });
  }

  @Post("api/chat/:id/stop")
  @HttpCode(200)
  async stop(@Param("id") id: string, @NervaCtx() ctx: ExecContext) {
    const run = await this.protocols.chat.stop({ chatId: id, ctx });
    return { runId: run.id, status: run.status };
  }

  @Post("ag-ui")
  agUi(@Body() body: unknown, @NervaCtx() ctx: ExecContext, @Res() res: unknown) {
    return this.protocols.agUi.run({ body, ctx, ...chatResponse(res) });
  }

  @All("mcp")
  async mcp(
    @Req() req: { raw?: unknown; body?: unknown },
    @NervaCtx() ctx: ExecContext,
    @Res() res: unknown,
  ) {
    const { res: raw, beforeWrite } = chatResponse(res);
    beforeWrite();
    // Fastify's request wraps Node's in `raw`; Express's is Node's own.
    await this.protocols.mcp.handle((req.raw ?? req) as never, raw, ctx, req.body);
  }
}
