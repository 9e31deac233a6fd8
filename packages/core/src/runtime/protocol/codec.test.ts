import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ExecContext } from "../../context/exec-context.js";
import { NervaError } from "../../errors.js";
import { FrameDecoder, FrameErrorReason, encodeFrame } from "./codec.js";
import { HostFrameSchema, WorkerFrameSchema, type HostFrame, type WorkerFrame } from "./frames.js";

function collect<F>(schema: typeof WorkerFrameSchema | typeof HostFrameSchema, max?: number) {
  const frames: F[] = [];
  const errors: NervaError[] = [];
  const decoder = new FrameDecoder({
    schema: schema as never,
    ...(max === undefined ? {} : { maxFrameBytes: max }),
    onFrame: (f: F) => void frames.push(f),
    onError: (e) => void errors.push(e),
  });
  return { decoder, frames, errors };
}

const chunkArb = fc.record({
  type: fc.constant("chunk" as const),
  id: fc.string({ minLength: 1, maxLength: 20 }),
  text: fc.string({ unit: "grapheme", maxLength: 50 }),
});
const usageArb = fc.record({
  type: fc.constant("usage" as const),
  id: fc.string({ minLength: 1, maxLength: 20 }),
  prompt_tokens: fc.nat(),
  completion_tokens: fc.nat(),
  cost_usd: fc.double({ min: 0, max: 100, noNaN: true }),
});
const resultArb = fc.record({
  type: fc.constant("result" as const),
  id: fc.string({ minLength: 1, maxLength: 20 }),
  result: fc.record({
    status: fc.constantFrom("success", "error", "wrong_handler"),
    output: fc.string({ unit: "binary", maxLength: 80 }),
    data: fc.dictionary(fc.string({ maxLength: 5 }), fc.oneof(fc.string(), fc.integer())),
  }),
});

describe("encodeFrame + FrameDecoder", () => {
  it("round-trips any frames however the bytes are split", () => {
    fc.assert(
      fc.property(
        fc.array(fc.oneof(chunkArb, usageArb, resultArb), { minLength: 1, maxLength: 12 }),
        fc.array(fc.nat(), { maxLength: 30 }),
        (frames, cuts) => {
          const bytes = Buffer.from(frames.map((f) => encodeFrame(f)).join(""), "utf8");
          const points = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort(
            (a, b) => a - b,
          );
          const { decoder, frames: got, errors } = collect<WorkerFrame>(WorkerFrameSchema);
          let last = 0;
          for (const p of [...points, bytes.length]) {
            decoder.push(bytes.subarray(last, p));
            last = p;
          }
          decoder.end();
          expect(errors).toEqual([]);
          expect(got).toEqual(frames.map((f) => WorkerFrameSchema.parse(f)));
        },
      ),
      { numRuns: 200 },
    );
  });

  it("never throws on arbitrary bytes and reports problems as errors", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 400 }), (bytes) => {
        const { decoder, frames, errors } = collect<WorkerFrame>(WorkerFrameSchema, 64);
        decoder.push(bytes);
        decoder.end();
        for (const e of errors) {
          expect(e).toBeInstanceOf(NervaError);
          expect(Object.values(FrameErrorReason)).toContain(e.details["reason"]);
        }
        expect(frames.length + errors.length).toBeLessThanOrEqual(bytes.length + 1);
      }),
      { numRuns: 300 },
    );
  });

  it("keeps a multi-byte character split across reads intact", () => {
    const line = Buffer.from(encodeFrame({ type: "chunk", id: "a", text: "héllo → 🌍" }));
    const { decoder, frames } = collect<WorkerFrame>(WorkerFrameSchema);
    for (const byte of line) decoder.push(Buffer.from([byte]));
    expect(frames).toEqual([{ type: "chunk", id: "a", text: "héllo → 🌍" }]);
  });

  it("accepts CRLF line ends and skips blank lines", () => {
    const { decoder, frames, errors } = collect<WorkerFrame>(WorkerFrameSchema);
    decoder.push('\n\r\n  \n{"type":"chunk","text":"x"}\r\n\n');
    expect(errors).toEqual([]);
    expect(frames).toEqual([{ type: "chunk", text: "x" }]);
  });

  it("reports malformed JSON and carries on with the next frame", () => {
    const { decoder, frames, errors } = collect<WorkerFrame>(WorkerFrameSchema);
    decoder.push('{"type":"chunk",\n{"type":"chunk","text":"ok"}\n');
    expect(errors).toHaveLength(1);
    expect(errors[0]?.details["reason"]).toBe(FrameErrorReason.MALFORMED_JSON);
    expect(errors[0]?.message).toMatch(/not JSON/);
    expect(frames).toEqual([{ type: "chunk", text: "ok" }]);
  });

  it("reports a frame the schema rejects, naming the field", () => {
    const { decoder, frames, errors } = collect<WorkerFrame>(WorkerFrameSchema);
    decoder.push('{"type":"usage","prompt_tokens":-1}\n{"type":"nope"}\n');
    expect(frames).toEqual([]);
    expect(errors.map((e) => e.details["reason"])).toEqual([
      FrameErrorReason.INVALID_FRAME,
      FrameErrorReason.INVALID_FRAME,
    ]);
    expect(errors[0]?.message).toContain("frame.prompt_tokens");
    expect(errors[1]?.message).toContain("frame.type");
  });

  it("rejects unknown fields (strict frames)", () => {
    const { decoder, errors } = collect<WorkerFrame>(WorkerFrameSchema);
    decoder.push('{"type":"chunk","text":"x","extra":1}\n');
    expect(errors[0]?.message).toMatch(/extra/);
  });

  it("drops an oversized frame without buffering it, then recovers", () => {
    const { decoder, frames, errors } = collect<WorkerFrame>(WorkerFrameSchema, 100);
    const big = JSON.stringify({ type: "chunk", text: "x".repeat(1000) });
    // Fed in pieces without a newline: reported as soon as it crosses the limit.
    decoder.push(big.slice(0, 60));
    decoder.push(big.slice(60, 500));
    expect(errors).toHaveLength(1);
    expect(errors[0]?.details["reason"]).toBe(FrameErrorReason.TOO_LARGE);
    expect(decoder.bufferedBytes).toBe(0);
    decoder.push(big.slice(500));
    expect(decoder.bufferedBytes).toBe(0);
    decoder.push('\n{"type":"chunk","text":"after"}\n');
    expect(errors).toHaveLength(1);
    expect(frames).toEqual([{ type: "chunk", text: "after" }]);
  });

  it("drops an oversized frame that arrives in one read", () => {
    const { decoder, frames, errors } = collect<WorkerFrame>(WorkerFrameSchema, 100);
    decoder.push(
      encodeFrame({ type: "chunk", text: "y".repeat(200) }) + '{"type":"ready","protocol":1}\n',
    );
    expect(errors.map((e) => e.details["reason"])).toEqual([FrameErrorReason.TOO_LARGE]);
    expect(frames).toEqual([{ type: "ready", protocol: 1, pid: null, runtime: "unknown" }]);
  });

  it("reports a stream that ends mid-frame as truncated", () => {
    const { decoder, errors } = collect<WorkerFrame>(WorkerFrameSchema);
    decoder.push('{"type":"chunk","te');
    decoder.end();
    expect(errors[0]?.details["reason"]).toBe(FrameErrorReason.TRUNCATED);
  });

  it("reports a throwing consumer instead of throwing", () => {
    const errors: NervaError[] = [];
    const decoder = new FrameDecoder({
      schema: WorkerFrameSchema,
      onFrame: () => {
        throw new Error("consumer bug");
      },
      onError: (e) => void errors.push(e),
    });
    expect(() => decoder.push('{"type":"chunk","text":"x"}\n')).not.toThrow();
    expect(errors[0]?.details["reason"]).toBe(FrameErrorReason.CONSUMER_FAILED);
  });

  it("validates host frames, including the context of an invoke", () => {
    const ctx = ExecContext.create({ userId: "u1", timeoutSeconds: 5 });
    const { decoder, frames, errors } = collect<HostFrame>(HostFrameSchema);
    decoder.push(
      encodeFrame({
        type: "invoke",
        id: "i1",
        handler: "echo",
        module: "/x/echo.mjs",
        input: { message: "hi" },
        context: ctx.toWire(),
        stream: true,
      }),
    );
    decoder.push(encodeFrame({ type: "cancel", id: "i1", reason: "bye" }));
    decoder.push(
      '{"type":"invoke","id":"i2","handler":"x","input":{"message":"m"},"context":{}}\n',
    );
    expect(frames.map((f) => f.type)).toEqual(["invoke", "cancel"]);
    const invoke = frames[0] as Extract<HostFrame, { type: "invoke" }>;
    expect(invoke.input).toEqual({ message: "hi", args: {}, tools: [], history: [] });
    expect(ExecContext.fromWire(invoke.context).userId).toBe("u1");
    expect(errors[0]?.message).toContain("frame.context.request_id");
    ctx.dispose();
  });

  it("refuses a non-positive maxFrameBytes", () => {
    expect(
      () =>
        new FrameDecoder({
          schema: WorkerFrameSchema,
          maxFrameBytes: 0,
          onFrame: () => {},
          onError: () => {},
        }),
    ).toThrow(/maxFrameBytes/);
  });
});
