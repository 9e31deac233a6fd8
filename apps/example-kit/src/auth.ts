import { randomBytes, randomUUID } from "node:crypto";
import { SignJWT, jwtVerify, type JWTPayload } from "jose";

const ISSUER = "nerva-example";
const TOKEN_SECONDS = 3600;

/**
 * What the example's tokens carry: the user (`sub`), roles and a session id (`sid`).
 *
 * @example
 * const claims: TokenClaims = await auth.verify(token); // { sub: "alice", roles: [], sid: "…" }
 */
export interface TokenClaims extends JWTPayload {
  sub: string;
  roles: string[];
  sid: string;
}

/**
 * HS256 JWTs with a local secret: `mint` for the dev `/token` endpoint, `verify` for requests.
 *
 * @example
 * const auth: DevAuth = createAuth(process.env.JWT_SECRET);
 */
export interface DevAuth {
  mint(userId: string, roles?: string[]): Promise<{ token: string; expiresInSeconds: number }>;
  verify(token: string): Promise<TokenClaims>;
}

/**
 * Creates the example's JWT auth. Without `secretText` (env `JWT_SECRET`) a random secret is made
 * at start, so tokens from an earlier run are not accepted.
 *
 * @example
 * const auth = createAuth();
 * const { token } = await auth.mint("alice", ["member"]);
 * (await auth.verify(token)).sub; // "alice"
 */
export function createAuth(secretText?: string): DevAuth {
  const secret =
    secretText !== undefined && secretText !== ""
      ? new TextEncoder().encode(secretText)
      : new Uint8Array(randomBytes(32));
  return {
    async mint(userId, roles = []) {
      const token = await new SignJWT({ roles, sid: randomUUID() })
        .setProtectedHeader({ alg: "HS256" })
        .setSubject(userId)
        .setIssuer(ISSUER)
        .setAudience(ISSUER)
        .setIssuedAt()
        .setExpirationTime(`${TOKEN_SECONDS}s`)
        .sign(secret);
      return { token, expiresInSeconds: TOKEN_SECONDS };
    },
    async verify(token) {
      const { payload } = await jwtVerify(token, secret, {
        issuer: ISSUER,
        audience: ISSUER,
        algorithms: ["HS256"],
      });
      if (typeof payload.sub !== "string" || typeof payload.sid !== "string") {
        throw new Error("token lacks sub or sid");
      }
      const roles = Array.isArray(payload.roles)
        ? payload.roles.filter((r): r is string => typeof r === "string")
        : [];
      return { ...payload, sub: payload.sub, sid: payload.sid, roles };
    },
  };
}

/**
 * User names the dev `/token` endpoint accepts.
 *
 * @example
 * USER_NAME.test("alice"); // true
 */
export const USER_NAME = /^[A-Za-z0-9._-]{1,64}$/;
/**
 * Session ids a client may pick with `x-session-id` (scoped to its user by memory).
 *
 * @example
 * const sessionId = SESSION_ID.test(header) ? header : claims.sid;
 */
export const SESSION_ID = /^[A-Za-z0-9._:-]{1,64}$/;
