import { describe, expect, it } from "vitest";
import { ErrorCode, NervaError } from "../errors.js";
import { defaultResolve, resolveIdentity } from "./identity.js";
import { parseHttpOptions } from "./options.js";

const req = (user?: unknown, headers: Record<string, string> = {}) => ({ headers, user });

function codeOf(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    if (err instanceof NervaError) return err.code;
    throw err;
  }
  throw new Error("expected a throw");
}

describe("defaultResolve", () => {
  it("reads id, sub or userId and the roles of req.user", () => {
    expect(defaultResolve(req({ id: "u1", roles: ["admin", 3] }), false)).toMatchObject({
      userId: "u1",
      roles: ["admin"],
    });
    expect(defaultResolve(req({ sub: "u2", role: "member", sid: "s9" }), false)).toMatchObject({
      userId: "u2",
      roles: ["member"],
      sessionId: "s9",
    });
    expect(defaultResolve(req({ userId: 42 }), false).userId).toBe("42");
  });

  it("never uses a bearer token or identity headers unless trusted", () => {
    const headers = {
      authorization: "Bearer secret-token",
      "x-user-id": "mallory",
      "x-session-id": "s1",
    };
    expect(defaultResolve(req(undefined, headers), false)).toEqual({
      userId: null,
      sessionId: null,
    });
    expect(defaultResolve(req(undefined, { ...headers, "x-user-roles": "a, b" }), true)).toEqual({
      userId: "mallory",
      sessionId: "s1",
      roles: ["a", "b"],
    });
  });

  it("prefers the authenticated user over trusted headers", () => {
    expect(defaultResolve(req({ id: "alice" }, { "x-user-id": "mallory" }), true).userId).toBe(
      "alice",
    );
  });

  it("refuses a req.user it cannot read instead of going anonymous", () => {
    expect(codeOf(() => defaultResolve(req("a-token-string"), false))).toBe(ErrorCode.INTERNAL);
    expect(codeOf(() => defaultResolve(req({ name: "no id" }), false))).toBe(ErrorCode.INTERNAL);
  });
});

describe("resolveIdentity", () => {
  it("answers UNAUTHENTICATED with requireAuth and no user", () => {
    const o = parseHttpOptions({ requireAuth: true });
    expect(codeOf(() => resolveIdentity(req(), o))).toBe(ErrorCode.UNAUTHENTICATED);
    expect(resolveIdentity(req({ id: "u1" }), o).userId).toBe("u1");
  });

  it("grants anonymous requests nothing unless the app says so", () => {
    const strict = resolveIdentity(req(), parseHttpOptions());
    expect(strict.permissions.canUseAgent("echo")).toBe(false);
    const open = resolveIdentity(req(), parseHttpOptions({ anonymousPermissions: {} }));
    expect(open.permissions.canUseAgent("echo")).toBe(true);
  });

  it("grants users the permissions option, narrowed by their own lists", () => {
    const o = parseHttpOptions({ permissions: { allowedTools: ["search", "book"] } });
    const plain = resolveIdentity(req({ id: "u1" }), o);
    expect(plain.permissions.canUseTool("book")).toBe(true);
    expect(plain.permissions).toBe(o.permissions);
    const narrowed = resolveIdentity(req({ id: "u1", allowedTools: ["search"], roles: ["r"] }), o);
    expect(narrowed.permissions.canUseTool("book")).toBe(false);
    expect(narrowed.permissions.hasRole("r")).toBe(true);
  });

  it("fills a custom resolve's omissions and validates what it returns", () => {
    const o = parseHttpOptions({
      memoryScope: "user",
      resolve: (r: { headers: Record<string, string> }) =>
        r.headers["x-bad"] === undefined
          ? { userId: "u7", roles: ["x"] }
          : ({ userId: 5 } as never),
    });
    expect(resolveIdentity(req(), o)).toMatchObject({
      userId: "u7",
      sessionId: null,
      memoryScope: "user",
    });
    expect(codeOf(() => resolveIdentity(req(undefined, { "x-bad": "1" }), o))).toBe(
      ErrorCode.INTERNAL,
    );
  });

  it("refuses an asynchronous resolve", () => {
    const o = parseHttpOptions({ resolve: (async () => ({ userId: "u" })) as never });
    expect(codeOf(() => resolveIdentity(req(), o))).toBe(ErrorCode.INTERNAL);
  });

  it("answers 400 for an oversized trusted identity header", () => {
    const o = parseHttpOptions({ trustIdentityHeaders: true });
    expect(codeOf(() => resolveIdentity(req(undefined, { "x-user-id": "x".repeat(300) }), o))).toBe(
      ErrorCode.INVALID_INPUT,
    );
  });

  it("shares Permissions per role set without confusing different sets", () => {
    const o = parseHttpOptions();
    const a1 = resolveIdentity(req({ id: "u1", roles: ["a", "b"] }), o).permissions;
    const a2 = resolveIdentity(req({ id: "u2", roles: ["a", "b"] }), o).permissions;
    const joined = resolveIdentity(req({ id: "u3", roles: ["a\u0000b"] }), o).permissions;
    expect(a1).toBe(a2);
    expect(joined.roles).toEqual(["a\u0000b"]);
    expect(a1.roles).toEqual(["a", "b"]);
  });

  it("refuses unknown fields from a custom resolve", () => {
    const o = parseHttpOptions({ resolve: () => ({ userId: "u", isAdmin: true }) as never });
    expect(codeOf(() => resolveIdentity(req(), o))).toBe(ErrorCode.INTERNAL);
  });
});
