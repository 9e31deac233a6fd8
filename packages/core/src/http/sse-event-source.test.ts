import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ExecContext } from "../context/exec-context.js";
import { ErrorCode, NervaError } from "../errors.js";
import { createSSEEventSource, type SSEStreamEvent } from "./sse-event-source.js";

async function drain(events: AsyncIterable<SSEStreamEvent>): Promise<SSEStreamEvent[]> {
  const out: SSEStreamEvent[] = [];
  for await (const e of events) out.push(e);
  return out;
}

describe("createSSEEventSource", () => {
  it("takes one chunk from the source per event pulled, never more", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 0, max: 20 }),
        fc.integer({ min: 1, max: 25 }),
        async (pulls, total) => {
          let produced = 0;
          const source = (async function* () {
            for (let i = 0; i < total; i++) {
              produced++;
              yield `chunk ${i}`;
            }
          })();
          const events = createSSEEventSource(source);
          for (let i = 0; i < pulls; i++) {
            await events.next();
            // An event in hand for each chunk produced: the source never ran ahead.
            expect(produced).toBe(Math.min(i + 1, total));
          }
          await events.return();
        },
      ),
      { numRuns: 50 },
    );
  });

  it("gives a message per chunk, then done with the request id and the returned value", async () => {
    const ctx = ExecContext.create();
    const source = (async function* () {
      yield "a\nb";
      yield { n: 1 };
      return { status: "success" };
    })();
    expect(await drain(createSSEEventSource(source, { ctx }))).toEqual([
      { type: "message", data: "a\nb" },
      { type: "message", data: '{"n":1}' },
      {
        type: "done",
        data: JSON.stringify({ requestId: ctx.requestId, result: { status: "success" } }),
      },
    ]);
  });

  it("ends with one error event and reports the error once, hiding a 5xx message", async () => {
    const reported: unknown[] = [];
    const boom = new Error("password=hunter2");
    const source = (async function* () {
      yield "partial";
      throw boom;
    })();
    const events = createSSEEventSource(source, { onError: (e) => reported.push(e) });
    const all = await drain(events);
    expect(all.map((e) => e.type)).toEqual(["message", "error"]);
    expect(JSON.parse(all[1]?.data ?? "")).toMatchObject({
      status: 500,
      error: { code: "INTERNAL" },
    });
    expect(all[1]?.data).not.toContain("hunter2");
    expect(reported).toEqual([boom]);
    expect(events.outcome).toBe("error");
    expect(await events.next()).toEqual({ done: true, value: undefined });
  });

  it("keeps the status and message of a client error", async () => {
    const source = (async function* () {
      yield* [];
      throw new NervaError(ErrorCode.RATE_LIMITED, "slow down", {
        details: { retryAfterSeconds: 1 },
      });
    })();
    const [event] = await drain(createSSEEventSource(source));
    expect(JSON.parse(event?.data ?? "")).toMatchObject({
      status: 429,
      error: { code: "RATE_LIMITED", message: "slow down" },
    });
  });

  it("cancels at once while a pull waits on the source: context, source and the pending pull", async () => {
    const ctx = ExecContext.create();
    let returned = false;
    const source: AsyncIterable<string> = {
      [Symbol.asyncIterator]: () => ({
        next: () => new Promise<IteratorResult<string>>(() => undefined), // never produces
        return: async () => {
          returned = true;
          return { done: true, value: undefined };
        },
      }),
    };
    const events = createSSEEventSource(source, { ctx });
    const pending = events.next();
    events.cancel();
    expect(await pending).toEqual({ done: true, value: undefined });
    expect(ctx.isCancelled()).toBe(true);
    expect(events.outcome).toBe("disconnected");
    await new Promise((r) => setImmediate(r));
    expect(returned).toBe(true);
  });

  it("refuses a chunk nested too deep to serialise, as an error event (never a RangeError)", async () => {
    let deep: unknown = "leaf";
    for (let i = 0; i < 100_000; i++) deep = [deep];
    const source = (async function* () {
      yield deep;
    })();
    const [event] = await drain(createSSEEventSource(source));
    expect(event?.type).toBe("error");
    expect(JSON.parse(event?.data ?? "")).toMatchObject({ status: 500 });
  });
});
