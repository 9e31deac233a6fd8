import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ExecContext } from "../context/exec-context.js";
import { ErrorCode, NervaError } from "../errors.js";
import { createSSEEventSource, type SSEEventSource } from "./sse-event-source.js";

type Event = SSEEventSource extends AsyncIterator<infer E> ? E : never;

async function drain(events: AsyncIterable<Event>): Promise<Event[]> {
  const out: Event[] = [];
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

  it("gives a message per chunk with a running id, then done with the request id and the returned value", async () => {
    const ctx = ExecContext.create();
    const source = (async function* () {
      yield "a\nb";
      yield { n: 1 };
      return { status: "success" };
    })();
    expect(await drain(createSSEEventSource(source, { ctx }))).toEqual([
      { id: "1", event: "message", data: "a\nb" },
      { id: "2", event: "message", data: '{"n":1}' },
      {
        id: "3",
        event: "done",
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
    expect(all.map((e) => e.event)).toEqual(["message", "error"]);
    expect(all[1]?.id).toBeUndefined();
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
    expect(event?.event).toBe("error");
    expect(JSON.parse(event?.data ?? "")).toMatchObject({ status: 500 });
  });

  it("maps items with options.message and ends with the source, no done event of its own", async () => {
    const source = (async function* () {
      yield { seq: 4, type: "run.started" };
      yield { seq: 5, type: "run.succeeded" };
      return "ignored";
    })();
    const events = createSSEEventSource(source, {
      message: (e) => ({ id: e.seq, event: e.type, data: { seq: e.seq } }),
    });
    expect(await drain(events)).toEqual([
      { id: "4", event: "run.started", data: '{"seq":4}' },
      { id: "5", event: "run.succeeded", data: '{"seq":5}' },
    ]);
    expect(events.outcome).toBe("done");
  });

  it("refuses a mapper that returns no message, as an error event", async () => {
    const source = (async function* () {
      yield 1;
    })();
    const [event] = await drain(createSSEEventSource(source, { message: () => null as never }));
    expect(event?.event).toBe("error");
  });
});
