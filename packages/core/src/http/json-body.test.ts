import { describe, expect, it } from "vitest";
import { ErrorCode, NervaError } from "../errors.js";
import { jsonBodyOf } from "./json-body.js";
import { HttpErrorCode, HttpRequestError, requestErrorOf } from "./request-errors.js";
import { toHttpError } from "./status.js";

const json = { "content-type": "application/json; charset=utf-8", "content-length": "20" };

function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (err) {
    return err;
  }
  throw new Error("expected a throw");
}

describe("jsonBodyOf", () => {
  it("returns a JSON object body, for application/json and +json types", () => {
    expect(jsonBodyOf({ headers: json, body: { message: "hi" } })).toEqual({ message: "hi" });
    const patch = { "content-type": "application/merge-patch+json", "content-length": "2" };
    expect(jsonBodyOf({ headers: patch, body: {} })).toEqual({});
  });

  it("answers 415 for a body that is not JSON by its content type, or has none", () => {
    for (const headers of [
      { "content-type": "text/plain", "content-length": "5" },
      { "content-type": "application/x-www-form-urlencoded", "content-length": "5" },
      { "transfer-encoding": "chunked" },
    ]) {
      const err = thrown(() => jsonBodyOf({ headers, body: "hello" }));
      expect(err).toBeInstanceOf(HttpRequestError);
      expect(toHttpError(err).status).toBe(415);
      expect(toHttpError(err).body.error.code).toBe(HttpErrorCode.UNSUPPORTED_MEDIA_TYPE);
    }
  });

  it("answers 400 for a missing body and for a body that is not an object", () => {
    const missing = thrown(() => jsonBodyOf({ headers: { "content-length": "0" } }));
    expect((missing as NervaError).code).toBe(ErrorCode.INVALID_INPUT);
    for (const body of ["hello", 42, null, [1, 2]]) {
      const err = thrown(() => jsonBodyOf({ headers: json, body }));
      expect((err as NervaError).code).toBe(ErrorCode.INVALID_INPUT);
      expect(toHttpError(err).status).toBe(400);
    }
  });

  it("bounds depth before anything recursive runs on the body", () => {
    let deep: unknown = 1;
    for (let i = 0; i < 10_000; i++) deep = { d: deep };
    const err = thrown(() => jsonBodyOf({ headers: json, body: deep as object }));
    expect((err as NervaError).code).toBe(ErrorCode.INVALID_INPUT);
    expect((err as NervaError).message).toMatch(/deeper than 64/);
  });

  it("calls a JSON body nothing parsed a server bug (500), not the client's fault", () => {
    const err = thrown(() => jsonBodyOf({ headers: json }));
    expect((err as NervaError).code).toBe(ErrorCode.INTERNAL);
    expect((err as NervaError).message).toMatch(/express\.json/);
  });
});

describe("requestErrorOf / toHttpError for a framework's body errors", () => {
  const bodyParser = (type: string, status: number, message: string) =>
    Object.assign(new SyntaxError(message), { type, status, statusCode: status, expose: true });
  const fastify = (code: string, statusCode: number) =>
    Object.assign(new Error(`fastify says ${code}`), { code, statusCode });

  it.each([
    [
      bodyParser("entity.parse.failed", 400, "Unexpected token } in JSON at position 9"),
      400,
      "INVALID_INPUT",
    ],
    [bodyParser("entity.too.large", 413, "request entity too large"), 413, "PAYLOAD_TOO_LARGE"],
    [
      bodyParser("charset.unsupported", 415, 'unsupported charset "UTF-7"'),
      415,
      "UNSUPPORTED_MEDIA_TYPE",
    ],
    [fastify("FST_ERR_CTP_INVALID_JSON_BODY", 400), 400, "INVALID_INPUT"],
    [fastify("FST_ERR_CTP_BODY_TOO_LARGE", 413), 413, "PAYLOAD_TOO_LARGE"],
    [fastify("FST_ERR_CTP_INVALID_MEDIA_TYPE", 415), 415, "UNSUPPORTED_MEDIA_TYPE"],
    [
      Object.assign(new SyntaxError("Unexpected end of JSON input"), { statusCode: 400 }),
      400,
      "INVALID_INPUT",
    ],
  ])("answers %s with %i %s and a fixed message", (err, status, code) => {
    const answer = toHttpError(err, "r1");
    expect(answer.status).toBe(status);
    expect(answer.body.error).toMatchObject({ code, requestId: "r1" });
    expect(answer.body.error.message).not.toMatch(/Unexpected|position|fastify says|UTF-7/);
  });

  it("tells a charset or content-encoding problem for what it is, and suggests no route's body shape", () => {
    const charset = toHttpError(
      bodyParser("charset.unsupported", 415, 'unsupported charset "UTF-7"'),
    );
    expect(charset.body.error.message).toMatch(/charset.*UTF-8/);
    const encoding = toHttpError(
      bodyParser("encoding.unsupported", 415, 'unsupported content encoding "zstd"'),
    );
    expect(encoding.body.error.message).toMatch(/content-encoding/);
    const malformed = toHttpError(bodyParser("entity.parse.failed", 400, "Unexpected token"));
    expect(malformed.body.error.message).not.toContain('"message"');
    for (const body of [undefined, "hi"]) {
      const err = thrown(() =>
        jsonBodyOf({ headers: { "content-type": "application/json" }, body }),
      ) as Error;
      expect(err.message).not.toContain('"message"');
    }
  });

  it("turns Fastify's schema failures into INVALID_INPUT issues", () => {
    const err = Object.assign(new Error("body/message must be string"), {
      code: "FST_ERR_VALIDATION",
      statusCode: 400,
      validationContext: "body",
      validation: [{ instancePath: "/message", message: "must be string" }],
    });
    expect(toHttpError(err).body.error).toMatchObject({
      code: "INVALID_INPUT",
      issues: [{ path: "body.message", message: "must be string" }],
    });
  });

  it("leaves other errors alone, and codes 4xx ones by their status", () => {
    const plain = new Error("x");
    expect(requestErrorOf(plain)).toBe(plain);
    expect(toHttpError(Object.assign(new Error("no"), { status: 401 })).body.error.code).toBe(
      "UNAUTHENTICATED",
    );
    expect(
      toHttpError(Object.assign(new Error("mine"), { status: 409, code: "MY_CONFLICT" })).body.error
        .code,
    ).toBe("MY_CONFLICT");
  });
});
