import { ErrorCode, NervaError } from "@nerva/core";
import { Inject, Injectable, type CanActivate, type ExecutionContext } from "@nestjs/common";
import type { DevAuth, TokenClaims } from "@nerva/example-kit";

/** Injection token of the example's {@link DevAuth}. */
export const DEV_AUTH = Symbol("DEV_AUTH");

const unauthenticated = (message: string, wwwAuthenticate: string) =>
  new NervaError(ErrorCode.UNAUTHENTICATED, message, { details: { wwwAuthenticate } });

/**
 * The app's own authentication, as a Nest guard: a valid bearer JWT sets `request.user`
 * (what `@NervaCtx()` reads afterwards); anything else is a 401, answered by NervaModule's filter.
 */
@Injectable()
export class JwtAuthGuard implements CanActivate {
  constructor(@Inject(DEV_AUTH) private readonly auth: DevAuth) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const request = context
      .switchToHttp()
      .getRequest<{ headers: Record<string, string | undefined>; user?: TokenClaims }>();
    const token = /^Bearer (\S+)$/.exec(request.headers.authorization ?? "")?.[1];
    if (token === undefined) {
      throw unauthenticated(
        "Send Authorization: Bearer <token> (get one from POST /token).",
        "Bearer",
      );
    }
    try {
      request.user = await this.auth.verify(token);
    } catch {
      throw unauthenticated("Invalid or expired token.", 'Bearer error="invalid_token"');
    }
    return true;
  }
}
