import { describe, expect, it } from "vitest";
import { ErrorCode, NervaError, UnrecoverableError } from "../errors.js";
import { AgentStatus } from "../types/status.js";
import { httpStatusOf, httpStatusOfResult, toHttpError } from "./status.js";

describe("NervaError → HTTP status", () => {
  const rows: [ErrorCode, number][] = [
    [ErrorCode.INVALID_INPUT, 400],
    [ErrorCode.INVALID_OPTIONS, 400],
    [ErrorCode.UNAUTHENTICATED, 401],
    [ErrorCode.PERMISSION_DENIED, 403],
    [ErrorCode.POLICY_DENIED, 403],
    [ErrorCode.NOT_FOUND, 404],
    [ErrorCode.RATE_LIMITED, 429],
    [ErrorCode.BUDGET_EXCEEDED, 429],
    [ErrorCode.CANCELLED, 499],
    [ErrorCode.CIRCUIT_OPEN, 503],
    [ErrorCode.TIMEOUT, 504],
    [ErrorCode.APPROVAL_PENDING, 202],
    [ErrorCode.INTERNAL, 500],
    [ErrorCode.DUPLICATE_HANDLER, 500],
    [ErrorCode.MISSING_DEPENDENCY, 500],
    [ErrorCode.INVALID_STATE, 409],
    [ErrorCode.UNAVAILABLE, 503],
    [ErrorCode.LEASE_LOST, 500],
    [ErrorCode.EMPTY_CHAIN, 500],
    [ErrorCode.UNRECOVERABLE, 500],
  ];
  it.each(rows)("%s → %i", (code, status) => {
    expect(httpStatusOf(new NervaError(code, "x"))).toBe(status);
  });

  it("keeps the status of other errors and defaults to 500", () => {
    expect(httpStatusOf(Object.assign(new Error("gone"), { status: 410 }))).toBe(410);
    expect(httpStatusOf({ getStatus: () => 418 })).toBe(418);
    expect(httpStatusOf(Object.assign(new Error("x"), { statusCode: 200 }))).toBe(500);
    expect(httpStatusOf("boom")).toBe(500);
  });
});

describe("toHttpError", () => {
  it("lists validation issues on a 400", () => {
    const err = new NervaError(ErrorCode.INVALID_INPUT, "Invalid input: message: required", {
      issues: [{ path: "input.message", message: "required" }],
    });
    const { status, body } = toHttpError(err, "r1");
    expect(status).toBe(400);
    expect(body.error).toEqual({
      code: "INVALID_INPUT",
      message: "Invalid input: message: required",
      requestId: "r1",
      issues: [{ path: "input.message", message: "required" }],
    });
  });

  it("sets Retry-After for rate limits and open circuits", () => {
    const limited = new NervaError(ErrorCode.RATE_LIMITED, "slow down", {
      details: { retryAfterSeconds: 2.2 },
    });
    expect(toHttpError(limited).headers["retry-after"]).toBe("3");
    const open = new NervaError(ErrorCode.CIRCUIT_OPEN, "open", {
      details: { retryAfterSeconds: 9.5 },
    });
    const answer = toHttpError(open);
    expect(answer.status).toBe(503);
    expect(answer.headers["retry-after"]).toBe("10");
  });

  it("challenges on 401", () => {
    const { headers } = toHttpError(new NervaError(ErrorCode.UNAUTHENTICATED, "login"));
    expect(headers["www-authenticate"]).toBe("Bearer");
  });

  it("never exposes the message of a 500", () => {
    const secret = new NervaError(ErrorCode.INTERNAL, "db password is hunter2", {
      details: { dsn: "postgres://secret" },
    });
    const { status, body } = toHttpError(secret, "r9");
    expect(status).toBe(500);
    expect(JSON.stringify(body)).not.toMatch(/hunter2|secret/);
    expect(body.error.message).toMatch(/r9/);
    expect(toHttpError(new Error("stack details")).body.error.message).not.toMatch(/stack/);
    const declined = toHttpError(new UnrecoverableError("card 4242 declined by acquirer X"), "r1");
    expect(declined.status).toBe(500);
    expect(declined.body.error).toMatchObject({ code: "INTERNAL", requestId: "r1" });
    expect(JSON.stringify(declined.body)).not.toMatch(/4242|acquirer/);
  });

  it("exposes the message of an error with a 4xx status", () => {
    const { status, body } = toHttpError(
      Object.assign(new Error("Gone for good"), { status: 410 }),
    );
    expect(status).toBe(410);
    expect(body.error).toMatchObject({ code: "HTTP_410", message: "Gone for good" });
  });
});

describe("AgentResult status → HTTP status", () => {
  it.each([
    [AgentStatus.SUCCESS, 200],
    [AgentStatus.NEEDS_DATA, 200],
    [AgentStatus.NEEDS_CREDENTIALS, 200],
    [AgentStatus.WRONG_HANDLER, 422],
    [AgentStatus.ERROR, 502],
    [AgentStatus.TIMEOUT, 504],
  ])("%s → %i", (status, http) => {
    expect(httpStatusOfResult({ status })).toBe(http);
  });
});
