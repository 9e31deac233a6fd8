import { jsonBodyOf, type JsonBodyRequest } from "@nerva/core/http";
import { Controller, Get, HttpCode, Inject, Post, Req } from "@nestjs/common";
import { EXAMPLE_ENDPOINTS, tokenRequestOf, type DevAuth } from "@nerva/example-kit";
import { DEV_AUTH } from "./jwt-auth.guard.js";

/** Development convenience: anyone can get a token. A real app gets tokens from its identity provider. */
@Controller()
export class TokenController {
  constructor(@Inject(DEV_AUTH) private readonly auth: DevAuth) {}

  @Get()
  info() {
    return {
      name: "nerva-nestjs-example",
      endpoints: EXAMPLE_ENDPOINTS,
    };
  }

  @Post("token")
  @HttpCode(200)
  async token(@Req() request: JsonBodyRequest) {
    const { user, roles } = tokenRequestOf(jsonBodyOf(request));
    return { ...(await this.auth.mint(user, roles)), tokenType: "Bearer" };
  }
}
