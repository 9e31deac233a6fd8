// Every way an SSE event source ends closes what it reads from: its producer (the reader's side
// is tested in testing/sse-reader.test.ts).
import { describe, expect, it } from "vitest";
import { ExecContext } from "../context/exec-context.js";
import { createSSEEventSource } from "./sse-event-source.js";

describe("createSSEEventSource closes its source however the stream ends", () => {
  it("a chunk it cannot send ends the stream with an error event, and stops the producer", async () => {
    const ctx = ExecContext.create();
    let finallyRan = false;
    let deep: unknown = "leaf";
    for (let i = 0; i < 100_000; i++) deep = [deep];
    const source = (async function* () {
      try {
        yield "fine";
        yield deep;
        yield "never taken";
      } finally {
        finallyRan = true;
      }
    })();
    const events = createSSEEventSource(source, { ctx });
    const seen: string[] = [];
    for await (const e of events) seen.push(e.event);
    expect(seen).toEqual(["message", "error"]);
    expect(events.outcome).toBe("error");
    expect(ctx.isCancelled()).toBe(true);
    await new Promise<void>((resolve) => setImmediate(resolve));
    expect(finallyRan).toBe(true);
  });

  it("a done mapper that throws ends the stream with an error event, source closed", async () => {
    let finallyRan = false;
    const source = (async function* () {
      try {
        yield "a";
        return "the end";
      } finally {
        finallyRan = true;
      }
    })();
    const events = createSSEEventSource(source, {
      done: () => {
        throw new Error("mapper broke");
      },
    });
    const seen: string[] = [];
    for await (const e of events) seen.push(e.event);
    expect(seen).toEqual(["message", "error"]);
    expect(finallyRan).toBe(true);
  });
});
