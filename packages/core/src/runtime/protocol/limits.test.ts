// The decoder's bounds on what a peer sends: nesting and value count checked (iteratively)
// before the schema recurses, a schema that throws, and the worker side receiving deep host
// frames. Generated nesting of every shape, in every frame type.
import { PassThrough } from "node:stream";
import fc from "fast-check";
import { z } from "zod";
import { describe, expect, it } from "vitest";
import { ExecContext } from "../../context/exec-context.js";
import { NervaError } from "../../errors.js";
import { serveWorker } from "../subprocess/worker-host.js";
import { DEFAULT_FRAME_JSON_LIMITS, FrameDecoder, FrameErrorReason, encodeFrame } from "./codec.js";
import { HostFrameSchema, WorkerFrameSchema, type WorkerFrame } from "./frames.js";

type Kind = "array" | "object";

/** JSON text of `depth` nested containers following `pattern` (cycled), built without recursion. */
function nestedText(depth: number, pattern: readonly Kind[]): string {
  const open: string[] = [];
  const close: string[] = [];
  for (let i = 0; i < depth; i++) {
    const kind = pattern[i % pattern.length];
    open.push(kind === "array" ? "[" : '{"k":');
    close.push(kind === "array" ? "]" : "}");
  }
  return open.join("") + "1" + close.reverse().join("");
}

/** Where a value goes in each frame type, and how many levels the frame wraps it in. */
const WORKER_SLOTS = {
  result: { wrap: 3, text: (v: string) => `{"type":"result","result":{"data":{"x":${v}}}}` },
  chunk: { wrap: 1, text: (v: string) => `{"type":"chunk","text":"t","extra":${v}}` },
  usage: { wrap: 1, text: (v: string) => `{"type":"usage","prompt_tokens":${v}}` },
  delegate: {
    wrap: 3,
    text: (v: string) =>
      `{"type":"delegate","call_id":"1","handler":"h","input":{"message":"m","args":{"a":${v}}}}`,
  },
  error: { wrap: 1, text: (v: string) => `{"type":"error","message":${v}}` },
  span: {
    wrap: 3,
    text: (v: string) =>
      `{"type":"span","span":{"span_id":"a","parent_id":null,"name":"n","started_at":0,"ended_at":0,"attributes":{"a":${v}}}}`,
  },
  ready: { wrap: 1, text: (v: string) => `{"type":"ready","protocol":1,"runtime":${v}}` },
} as const;

function decode(line: string, limits?: { maxDepth: number; maxNodes: number }) {
  const frames: WorkerFrame[] = [];
  const errors: NervaError[] = [];
  const decoder = new FrameDecoder({
    schema: WorkerFrameSchema,
    maxFrameBytes: 64 * 1024 * 1024,
    ...(limits === undefined ? {} : { jsonLimits: limits }),
    onFrame: (f) => void frames.push(f),
    onError: (e) => void errors.push(e),
  });
  decoder.push(line + "\n");
  decoder.end();
  return { frames, errors };
}

describe("FrameDecoder bounds", () => {
  it("allows 65 levels: the frame and the 64 of the value it carries", () => {
    expect(DEFAULT_FRAME_JSON_LIMITS).toEqual({ maxDepth: 65, maxNodes: 1_000_000 });
  });

  it("never throws, and refuses exactly the frames nested past the limit, in every frame type (generated)", () => {
    const slot = fc.constantFrom(...(Object.keys(WORKER_SLOTS) as (keyof typeof WORKER_SLOTS)[]));
    const depth = fc.oneof(fc.integer({ min: 0, max: 70 }), fc.integer({ min: 70, max: 30_000 }));
    const pattern = fc.array(fc.constantFrom<Kind>("array", "object"), {
      minLength: 1,
      maxLength: 6,
    });
    fc.assert(
      fc.property(slot, depth, pattern, (name, d, p) => {
        const { wrap, text } = WORKER_SLOTS[name];
        const { frames, errors } = decode(text(nestedText(d, p)));
        expect(frames.length + errors.length).toBe(1);
        if (wrap + d > 65) {
          expect(errors[0]?.details["reason"]).toBe(FrameErrorReason.TOO_COMPLEX);
          expect(errors[0]?.message).toMatch(/^Frame too complex \(nested deeper than 65 levels\)/);
        } else {
          // Within the bounds the schema decides, as before.
          expect(errors[0]?.details["reason"] ?? "delivered").not.toBe(
            FrameErrorReason.TOO_COMPLEX,
          );
        }
        if (name === "result" && wrap + d <= 65) expect(frames).toHaveLength(1);
      }),
      { numRuns: 300 },
    );
  });

  it("carries any result a handler may return (data of 63 levels) in both directions", () => {
    const data = { x: JSON.parse(nestedText(62, ["array", "object"])) as unknown };
    const result = { status: "success" as const, output: "", data, error: null };
    const toHost = decode(encodeFrame({ type: "result", id: "i", result: result as never }).trim());
    expect(toHost.errors).toEqual([]);
    const errors: NervaError[] = [];
    const toWorker = new FrameDecoder({
      schema: HostFrameSchema,
      onFrame: () => undefined,
      onError: (e) => void errors.push(e),
    });
    toWorker.push(
      encodeFrame({ type: "delegate_result", id: "i", call_id: "1", result: result as never }),
    );
    expect(errors).toEqual([]);
  });

  it("refuses a frame holding more than a million values", () => {
    const many = `{"type":"result","result":{"data":{"x":[${"0,".repeat(1_000_000)}0]}}}`;
    const { frames, errors } = decode(many);
    expect(frames).toEqual([]);
    expect(errors[0]?.details["reason"]).toBe(FrameErrorReason.TOO_COMPLEX);
    expect(errors[0]?.message).toMatch(/more than 1000000 values/);
  });

  it("applies the limits it is given", () => {
    const { errors } = decode(WORKER_SLOTS.result.text(nestedText(3, ["array"])), {
      maxDepth: 5,
      maxNodes: 100,
    });
    expect(errors[0]?.message).toMatch(/nested deeper than 5 levels/);
  });

  it("reports a schema that throws while validating instead of throwing", () => {
    const errors: NervaError[] = [];
    const decoder = new FrameDecoder({
      schema: z.object({ type: z.string() }).refine(() => {
        throw new RangeError("validator blew up");
      }),
      onFrame: () => expect.unreachable(),
      onError: (e) => void errors.push(e),
    });
    expect(() => decoder.push('{"type":"x"}\n')).not.toThrow();
    expect(errors[0]?.details["reason"]).toBe(FrameErrorReason.INVALID_FRAME);
    expect(errors[0]?.message).toMatch(/validator blew up/);
  });

  it("bounds host frames too: an invoke with a deep context or input", () => {
    const ctx = ExecContext.create({ userId: "u1" });
    const wire = JSON.stringify(ctx.toWire());
    const deep = nestedText(20_000, ["object", "array"]);
    for (const line of [
      `{"type":"invoke","id":"i","handler":"h","input":{"message":"m","args":${deep}},"context":${wire}}`,
      `{"type":"invoke","id":"i","handler":"h","input":{"message":"m"},"context":${wire.replace(/^\{/, `{"extra":${deep},`)}}`,
      `{"type":"delegate_result","id":"i","call_id":"1","result":{"status":"success","data":{"d":${deep}}}}`,
    ]) {
      const errors: NervaError[] = [];
      const decoder = new FrameDecoder({
        schema: HostFrameSchema,
        onFrame: () => expect.unreachable(),
        onError: (e) => void errors.push(e),
      });
      decoder.push(line + "\n");
      expect(errors[0]?.details["reason"]).toBe(FrameErrorReason.TOO_COMPLEX);
    }
    ctx.dispose();
  });
});

describe("serveWorker receiving hostile host frames", () => {
  it("answers a deep invoke with an error frame and keeps serving", async () => {
    const toWorker = new PassThrough();
    const fromWorker = new PassThrough();
    const frames: WorkerFrame[] = [];
    const decoder = new FrameDecoder({
      schema: WorkerFrameSchema,
      onFrame: (f) => void frames.push(f),
      onError: (e) => {
        throw e;
      },
    });
    fromWorker.on("data", (d: Buffer) => decoder.push(d));
    serveWorker({
      input: toWorker,
      output: fromWorker,
      resolveHandler: async () => async (input) => `echo ${input.message}`,
    });
    const ctx = ExecContext.create();
    const deep = nestedText(50_000, ["array"]);
    toWorker.write(
      `{"type":"invoke","id":"a","handler":"h","input":{"message":"m","args":{"x":${deep}}},"context":${JSON.stringify(ctx.toWire())}}\n`,
    );
    toWorker.write(
      encodeFrame({
        type: "invoke",
        id: "b",
        handler: "h",
        input: { message: "fine" },
        context: ctx.toWire(),
      }),
    );
    for (let i = 0; i < 100 && !frames.some((f) => f.type === "result"); i++) {
      await new Promise((r) => setTimeout(r, 10));
    }
    expect(frames.find((f) => f.type === "error")).toMatchObject({
      message: expect.stringMatching(/^Frame too complex \(nested deeper than 65 levels\)/),
    });
    expect(frames.find((f) => f.type === "result")).toMatchObject({
      id: "b",
      result: { status: "success", output: "echo fine" },
    });
    toWorker.end();
    ctx.dispose();
  });
});
