// Keeps the limits docs/protocol.md states honest: the nesting and value bounds of a frame, the
// error they quote, the partial frame at the end of a stream, and the spans from workers: the
// example frame, the bounds the page states, and its Python handler's span coming back.
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { ExecContext, type NervaError } from "@nerva/core";
import { MemoryTraceSink } from "@nerva/core/tracing";
import {
  FrameDecoder,
  FrameErrorReason,
  SPANS_DROPPED_EVENT,
  WORKER_SPAN_LIMITS,
  WorkerFrameSchema,
  type WorkerFrame,
} from "@nerva/core/protocol";
import { SubprocessRuntime } from "@nerva/core/subprocess";
import { codeBlocks } from "./code-blocks.js";

const page = readFileSync(join(dirname(fileURLToPath(import.meta.url)), "protocol.md"), "utf8");

function decodeAll(text: string): { frames: WorkerFrame[]; errors: NervaError[] } {
  const frames: WorkerFrame[] = [];
  const errors: NervaError[] = [];
  const decoder = new FrameDecoder({
    schema: WorkerFrameSchema,
    onFrame: (f) => void frames.push(f),
    onError: (e) => void errors.push(e),
  });
  decoder.push(text);
  decoder.end();
  return { frames, errors };
}

const decode = (text: string): NervaError[] => decodeAll(text).errors;

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

describe("docs/protocol.md: spans from workers", () => {
  const section = page.slice(page.indexOf("## Spans from workers"));
  const blocks = codeBlocks(join(dirname(fileURLToPath(import.meta.url)), "protocol.md"));
  const scratch = mkdtempSync(join(tmpdir(), "nerva-protocol-doc-"));
  afterAll(() => rmSync(scratch, { recursive: true, force: true }));

  it("shows a span frame the host accepts, as one line", () => {
    const json = blocks.filter((b) => b.lang === "json" && b.code.includes('"type": "span"'));
    expect(json).toHaveLength(1);
    const line = JSON.stringify(JSON.parse((json[0] as { code: string }).code));
    const { frames, errors } = decodeAll(`${line}\n`);
    expect(errors).toEqual([]);
    expect(frames[0]?.type).toBe("span");
  });

  it("states the bounds the host applies", () => {
    expect(section).toContain(`cut to **${WORKER_SPAN_LIMITS.maxNameChars}** characters`);
    expect(section).toContain(`the first **${WORKER_SPAN_LIMITS.maxAttributes}**`);
    expect(section).toContain(`keys cut to ${WORKER_SPAN_LIMITS.maxAttributeKeyChars} characters`);
    expect(section).toContain(`**${WORKER_SPAN_LIMITS.maxValueChars.toLocaleString("en")}**`);
    expect(section).toContain(
      `at most **${WORKER_SPAN_LIMITS.maxSpans.toLocaleString("en")} spans per invocation**`,
    );
    expect(section).toContain(`\`${SPANS_DROPPED_EVENT}\` event`);
  });

  it("its Python handler's span comes back under runtime.invoke, its usage charged once", async () => {
    const python = blocks.filter((b) => b.lang === "python");
    expect(python).toHaveLength(1);
    const dir = join(scratch, "agents");
    mkdirSync(dir, { recursive: true });
    const file = join(dir, "my_agent.py");
    writeFileSync(file, `${(python[0] as { code: string }).code}\n`);
    chmodSync(file, 0o755);
    const runtime = new SubprocessRuntime({ handlerDir: dir, pool: { min: 0 } });
    try {
      const sink = new MemoryTraceSink();
      const ctx = ExecContext.create({ userId: "reader", traceSink: sink });
      const result = await runtime.invoke("my_agent", { message: "hi there" }, ctx);
      expect(result).toMatchObject({ status: "success", output: "HI THERE" });
      const invoke = ctx.spans.find((s) => s.name === "runtime.invoke");
      const shout = ctx.spans.find((s) => s.name === "shout");
      expect(shout?.parentSpan).toBe(invoke);
      expect(shout?.traceId).toBe(ctx.traceId);
      expect(shout?.attributes).toEqual({ words: 2 });
      expect(sink.spans).toContain(shout);
      expect(ctx.tokenUsage).toMatchObject({ promptTokens: 10, completionTokens: 5 });
      expect(shout?.usage).toMatchObject({ promptTokens: 10, completionTokens: 5, costUsd: 0.01 });
      expect(invoke?.usage.totalTokens).toBe(0);
      expect(invoke?.totalUsage.totalTokens).toBe(15);
    } finally {
      await runtime.close();
    }
  }, 30_000);
});
