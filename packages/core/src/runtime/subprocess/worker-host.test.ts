import { spawn } from "node:child_process";
import { dirname, join } from "node:path";
import { PassThrough } from "node:stream";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { ExecContext } from "../../context/exec-context.js";
import { FrameDecoder, encodeFrame } from "../protocol/codec.js";
import { WorkerFrameSchema, type HostFrameInput, type WorkerFrame } from "../protocol/frames.js";
import type { AgentHandler } from "../types.js";
import { serveWorker } from "./worker-host.js";
import { workerEntry } from "./worker-process.js";

const modules = join(dirname(fileURLToPath(import.meta.url)), "fixtures", "modules");

/** A worker served over in-memory streams, with a frame inbox. */
function harness(handlers: Record<string, AgentHandler>) {
  const toWorker = new PassThrough();
  const fromWorker = new PassThrough();
  const frames: WorkerFrame[] = [];
  const waiters: (() => void)[] = [];
  let ended = false;
  const decoder = new FrameDecoder({
    schema: WorkerFrameSchema,
    onFrame: (f) => {
      frames.push(f);
      for (const w of waiters.splice(0)) w();
    },
    onError: (e) => {
      throw e;
    },
  });
  fromWorker.on("data", (d: Buffer) => decoder.push(d));
  serveWorker({
    input: toWorker,
    output: fromWorker,
    resolveHandler: async (frame) => {
      const fn = handlers[frame.handler];
      if (fn === undefined) throw new Error(`no handler ${frame.handler}`);
      return fn;
    },
    onEnd: () => {
      ended = true;
    },
  });
  const send = (frame: HostFrameInput | string) =>
    toWorker.write(typeof frame === "string" ? frame : encodeFrame(frame));
  const next = async (predicate: (f: WorkerFrame) => boolean): Promise<WorkerFrame> => {
    for (;;) {
      const found = frames.find(predicate);
      if (found !== undefined) {
        frames.splice(frames.indexOf(found), 1);
        return found;
      }
      await new Promise<void>((r) => waiters.push(r));
    }
  };
  return { send, next, frames, end: () => toWorker.end(), ended: () => ended };
}

const invoke = (id: string, handler: string, message: string, ctx = ExecContext.create()) =>
  ({
    type: "invoke",
    id,
    handler,
    input: { message },
    context: ctx.toWire(),
    stream: true,
  }) as const;

describe("serveWorker (the worker side of the protocol)", () => {
  it("announces itself, runs invocations concurrently and answers each by id", async () => {
    const h = harness({
      slowEcho: async (input) => {
        await new Promise((r) => setTimeout(r, 50));
        return `slow ${input.message}`;
      },
      echo: async (input) => `echo ${input.message}`,
    });
    expect(await h.next((f) => f.type === "ready")).toMatchObject({
      protocol: 1,
      pid: process.pid,
      runtime: `node ${process.version}`,
    });
    h.send(invoke("a", "slowEcho", "1"));
    h.send(invoke("b", "echo", "2"));
    const first = await h.next((f) => f.type === "result");
    const second = await h.next((f) => f.type === "result");
    expect(first).toMatchObject({ id: "b", result: { status: "success", output: "echo 2" } });
    expect(second).toMatchObject({ id: "a", result: { output: "slow 1" } });
  });

  it("streams chunks and usage deltas, then the result", async () => {
    const h = harness({
      gen: async function* (input, ctx) {
        ctx.recordTokens({ promptTokens: 3, completionTokens: 1 });
        for (const w of input.message.split(" ")) yield `${w}|`;
        ctx.recordTokens({ promptTokens: 2, costUsd: 0.5 });
      },
    });
    const ctx = ExecContext.create();
    ctx.recordTokens({ promptTokens: 100 }); // earlier usage of the request: never re-reported
    h.send(invoke("g", "gen", "a b", ctx));
    const seen: string[] = [];
    for (;;) {
      const f = await h.next(() => true);
      if (f.type === "ready") continue;
      seen.push(
        f.type === "chunk"
          ? `chunk:${f.text}`
          : f.type === "usage"
            ? `usage:${f.prompt_tokens}/${f.completion_tokens}/${f.total_tokens}/${f.cost_usd}`
            : f.type === "result"
              ? `result:${f.result.output}`
              : f.type,
      );
      if (f.type === "result") break;
    }
    expect(seen).toEqual([
      "usage:3/1/4/0",
      "chunk:a|",
      "chunk:b|",
      "usage:2/0/2/0.5",
      "result:a|b|",
    ]);
  });

  it("aborts the handler's signal on a cancel frame", async () => {
    const h = harness({
      wait: (_input, ctx) =>
        new Promise((resolve) =>
          ctx.signal.addEventListener("abort", () =>
            resolve({ status: "error", error: `stopped: ${(ctx.signal.reason as Error).message}` }),
          ),
        ),
    });
    h.send(invoke("w", "wait", "x"));
    await new Promise((r) => setTimeout(r, 20));
    h.send({ type: "cancel", id: "w", reason: "user left" });
    const result = await h.next((f) => f.type === "result");
    expect(result).toMatchObject({ id: "w", result: { status: "error" } });
    expect((result as { result: { error: string } }).result.error).toMatch(/stopped:.*user left/);
  });

  it("forwards runtime.delegate() to the host and resumes with its answer", async () => {
    const h = harness({
      outer: async (input, ctx, runtime) => {
        const inner = await runtime.delegate("inner", { message: input.message }, ctx);
        return `outer(${inner.output}/${inner.handler})`;
      },
      tryInvoke: async (input, ctx, runtime) => runtime.invoke("x", input, ctx).then(() => "no"),
    });
    h.send(invoke("o", "outer", "hi"));
    const del = await h.next((f) => f.type === "delegate");
    expect(del).toMatchObject({
      id: "o",
      call_id: "1",
      handler: "inner",
      input: { message: "hi" },
    });
    h.send({
      type: "delegate_result",
      id: "o",
      call_id: "1",
      result: { status: "success", output: "IN", data: {}, error: null, handler: "inner" },
    });
    expect(await h.next((f) => f.type === "result")).toMatchObject({
      result: { output: "outer(IN/inner)" },
    });
    h.send(invoke("t", "tryInvoke", "x"));
    const refused = await h.next((f) => f.type === "result");
    expect((refused as { result: { error: string } }).result.error).toMatch(
      /runtime\.invoke\(\) is not available inside a subprocess worker/,
    );
  });

  it("answers malformed frames with error frames and keeps serving", async () => {
    const h = harness({ echo: async (input) => input.message });
    h.send("this is not json\n");
    h.send('{"type":"invoke","id":"x"}\n');
    const e1 = await h.next((f) => f.type === "error");
    const e2 = await h.next((f) => f.type === "error");
    expect((e1 as { message: string }).message).toMatch(/not JSON/);
    expect((e2 as { message: string }).message).toMatch(/frame\.handler/);
    h.send(invoke("ok", "echo", "still fine"));
    expect(await h.next((f) => f.type === "result")).toMatchObject({
      result: { output: "still fine" },
    });
  });

  it("turns a throw or an unknown handler into an error result", async () => {
    const h = harness({
      boom: async () => {
        throw new Error("boom");
      },
    });
    h.send(invoke("1", "boom", "x"));
    h.send(invoke("2", "missing", "x"));
    const results = [
      await h.next((f) => f.type === "result"),
      await h.next((f) => f.type === "result"),
    ];
    expect(results.map((r) => (r as { result: { error: string } }).result.error).sort()).toEqual([
      "boom",
      "no handler missing",
    ]);
  });

  it("ends when its input ends or on shutdown", async () => {
    const a = harness({});
    a.end();
    await new Promise((r) => setTimeout(r, 10));
    expect(a.ended()).toBe(true);
    const b = harness({});
    b.send({ type: "shutdown" });
    await new Promise((r) => setTimeout(r, 10));
    expect(b.ended()).toBe(true);
  });
});

describe("worker entry with --stdio (how a container runs it)", () => {
  it("speaks frames on stdin/stdout and sends the handler's prints to stderr", async () => {
    const { file, execArgv } = workerEntry();
    const child = spawn(process.execPath, [...execArgv, file, "--stdio"], {
      stdio: ["pipe", "pipe", "pipe"],
      env: { PATH: process.env["PATH"] ?? "" },
    });
    const frames: WorkerFrame[] = [];
    const decoder = new FrameDecoder({
      schema: WorkerFrameSchema,
      onFrame: (f) => void frames.push(f),
      onError: (e) => frames.push({ type: "error", message: e.message }),
    });
    child.stdout.on("data", (d: Buffer) => decoder.push(d));
    let stderr = "";
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    const chatty = join(dirname(modules), "isolation", "chatty.mjs");
    const ctx = ExecContext.create();
    child.stdin.write(
      encodeFrame({
        type: "invoke",
        id: "c1",
        handler: "chatty",
        module: chatty,
        input: { message: "over stdio" },
        context: ctx.toWire(),
      }),
    );
    child.stdin.write(
      encodeFrame({
        type: "invoke",
        id: "e1",
        handler: "echo",
        module: join(modules, "echo.mjs"),
        input: { message: "hi" },
        context: ctx.toWire(),
      }),
    );
    const exited = new Promise<number | null>((r) => child.on("exit", r));
    for (let i = 0; i < 500 && frames.filter((f) => f.type === "result").length < 2; i++) {
      await new Promise((r) => setTimeout(r, 10));
    }
    child.stdin.end();
    expect(await exited).toBe(0);
    expect(frames.filter((f) => f.type === "error")).toEqual([]);
    expect(frames[0]).toMatchObject({ type: "ready", protocol: 1 });
    const results = Object.fromEntries(
      frames.flatMap((f) => (f.type === "result" ? [[f.id, f.result.output]] : [])),
    );
    expect(results).toEqual({ c1: "chatty: over stdio", e1: "echo: hi" });
    // console.log and process.stdout.write landed on stderr, never among the frames.
    expect(stderr).toContain("log line on stdout {not a frame}");
    expect(stderr).toContain('{"type":"result","result":{"output":"forged"}}');
    expect(stderr).toContain("warning: something odd");
  }, 30_000);
});
