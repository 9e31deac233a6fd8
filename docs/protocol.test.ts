// Keeps the limits docs/protocol.md states honest: the nesting and value bounds of a frame, the
// error they quote, and the partial frame at the end of a stream.
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import type { NervaError } from "@nerva/core";
import { FrameDecoder, FrameErrorReason, WorkerFrameSchema } from "@nerva/core/protocol";

const page = readFileSync(join(dirname(fileURLToPath(import.meta.url)), "protocol.md"), "utf8");

function decode(text: string): NervaError[] {
  const errors: NervaError[] = [];
  const decoder = new FrameDecoder({
    schema: WorkerFrameSchema,
    onFrame: () => undefined,
    onError: (e) => void errors.push(e),
  });
  decoder.push(text);
  decoder.end();
  return errors;
}

/** A result frame whose data holds a value of `depth` nested arrays: 3 + depth levels in all. */
const resultFrame = (depth: number) =>
  `{"type":"result","result":{"data":{"x":${"[".repeat(depth)}${"]".repeat(depth)}}}}\n`;

describe("docs/protocol.md", () => {
  it("states the nesting and size bounds of a frame, with the real error", () => {
    expect(page).toContain("A frame nests at most **65 levels**");
    expect(page).toContain("at most **a million values**");
    const quoted = /\(`(Frame too complex \(nested deeper than 65 levels\))`/.exec(page)?.[1];
    expect(quoted).toBeDefined();
    expect(decode(resultFrame(62))).toEqual([]);
    const [err] = decode(resultFrame(63));
    expect(err?.message.startsWith(quoted as string)).toBe(true);
    expect(err?.details["reason"]).toBe(FrameErrorReason.TOO_COMPLEX);
    expect(page).toContain("`too_complex`");
    const wide = `{"type":"result","result":{"data":{"x":[${"0,".repeat(1_000_000)}0]}}}\n`;
    expect(decode(wide)[0]?.message).toMatch(/more than 1000000 values/);
  });

  it("calls a partial frame at the end of the stream an error", () => {
    expect(page).toContain("**A partial frame at the end of the stream**");
    const [err] = decode('{"type":"result","res');
    expect(err?.details["reason"]).toBe(FrameErrorReason.TRUNCATED);
    expect(decode('{"type":"chunk","text":"x"}\n  ')).toEqual([]);
  });
});
