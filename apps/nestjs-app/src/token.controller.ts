import { BadRequestException, Body, Controller, Get, HttpCode, Inject, Post } from "@nestjs/common";
import { USER_NAME, type DevAuth } from "@nerva/example-kit";
import { DEV_AUTH } from "./jwt-auth.guard.js";

/** Development convenience: anyone can get a token. A real app gets tokens from its identity provider. */
@Controller()
export class TokenController {
  constructor(@Inject(DEV_AUTH) private readonly auth: DevAuth) {}

  @Get()
  info() {
    return {
      name: "nerva-nestjs-example",
      endpoints: ["POST /token", "POST /chat", "POST /chat/stream"],
    };
  }

  @Post("token")
  @HttpCode(200)
  async token(@Body() body: { user?: unknown; roles?: unknown }) {
    const roles = body?.roles ?? [];
    if (typeof body?.user !== "string" || !USER_NAME.test(body.user) || !Array.isArray(roles)) {
      throw new BadRequestException('Send { "user": "alice", "roles"?: ["member"] }.');
    }
    const minted = await this.auth.mint(
      body.user,
      roles.filter((r): r is string => typeof r === "string"),
    );
    return { ...minted, tokenType: "Bearer" };
  }
}
