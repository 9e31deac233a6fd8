import { describe, expect, it } from "vitest";
import { ErrorCode, NervaError } from "../errors.js";
import { parseHttpOptions } from "./options.js";

describe("parseHttpOptions", () => {
  it("applies the safe defaults", () => {
    const o = parseHttpOptions();
    expect(o.requireAuth).toBe(false);
    expect(o.trustIdentityHeaders).toBe(false);
    expect(o.trustRequestId).toBe(false);
    expect(o.requestIdHeader).toBe("x-request-id");
    expect(o.memoryScope).toBe("session");
    expect(o.anonymousPermissions.canUseTool("search")).toBe(false);
    expect(o.anonymousPermissions.canUseAgent("any")).toBe(false);
    expect(o.permissions.canUseTool("search")).toBe(true);
  });

  it("names each bad field", () => {
    let error: NervaError | undefined;
    try {
      parseHttpOptions({ requireAuth: "yes" as never, timeoutSeconds: -1, bogus: 1 } as never);
    } catch (err) {
      error = err as NervaError;
    }
    expect(error?.code).toBe(ErrorCode.INVALID_OPTIONS);
    const paths = error?.issues.map((i) => i.path) ?? [];
    expect(paths).toContain("options.requireAuth");
    expect(paths).toContain("options.timeoutSeconds");
    expect(error?.message).toMatch(/options\.requireAuth/);
  });
});
