import type { NervaIdentity } from "@nerva/core/http";
import { SESSION_ID, type TokenClaims } from "./auth.js";

/**
 * The identity a request runs as, for the bridges' `resolve` option: taken from the verified token
 * only (`null`, anonymous, without one). The client may pick a session id with `x-session-id`:
 * memory keys sessions under the user, so one user's sessions never reach another's; an id that
 * does not fit {@link SESSION_ID} falls back to the token's own session.
 *
 * @example
 * app.use(nervaMiddleware({ resolve: (req) => identityOf(req.user, req.headers["x-session-id"]) }));
 */
export function identityOf(
  user: TokenClaims | undefined,
  sessionHeader: string | string[] | undefined,
): NervaIdentity | null {
  if (user === undefined) return null;
  return {
    userId: user.sub,
    roles: user.roles,
    sessionId:
      typeof sessionHeader === "string" && SESSION_ID.test(sessionHeader)
        ? sessionHeader
        : user.sid,
  };
}
