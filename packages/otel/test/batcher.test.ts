// The sink's own batch queue (when it owns the exporter): nothing is exported inside the end()
// of a span, a full batch goes out on the next turn, a full queue drops and says so, and the
// export itself is never traced.
import { setImmediate as nextTurn } from "node:timers/promises";
import { context } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { ExportResultCode, isTracingSuppressed, type ExportResult } from "@opentelemetry/core";
import type { ReadableSpan } from "@opentelemetry/sdk-trace-base";
import { afterAll, describe, expect, it } from "vitest";
import { ExecContext } from "@nerva/core";
import { createOtelSink } from "../src/index.js";

context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
afterAll(() => context.disable());

/** An exporter that records each batch; while `hold`, its exports hang until `release()`. */
function recorder(hold = false) {
  const batches: ReadableSpan[][] = [];
  const pending: ((r: ExportResult) => void)[] = [];
  const suppressed: boolean[] = [];
  return {
    batches,
    suppressed,
    release: () => {
      hold = false;
      pending.splice(0).forEach((done) => done({ code: ExportResultCode.SUCCESS }));
    },
    exporter: {
      export(spans: ReadableSpan[], done: (r: ExportResult) => void) {
        batches.push(spans);
        suppressed.push(isTracingSuppressed(context.active()));
        if (hold) pending.push(done);
        else done({ code: ExportResultCode.SUCCESS });
      },
      shutdown: () => Promise.resolve(),
    },
  };
}

function endSpans(ctx: ExecContext, n: number): void {
  for (let i = 0; i < n; i++) ctx.startSpan(`s${i}`).end();
}

describe("the sink's batch queue", () => {
  it("exports a full batch on the next turn of the event loop, never inside end()", async () => {
    const r = recorder();
    const sink = createOtelSink({ exporter: r.exporter });
    endSpans(ExecContext.create({ traceSink: sink }), 600);
    expect(r.batches).toHaveLength(0);
    await nextTurn();
    expect(r.batches.map((b) => b.length)).toEqual([512]);
    await sink.forceFlush();
    expect(r.batches.map((b) => b.length)).toEqual([512, 88]);
    expect(r.batches[0]![0]!.name).toBe("s0");
    // The export's own requests are not traced by an instrumentation.
    expect(r.suppressed).toEqual([true, true]);
    await sink.shutdown();
  });

  it("drops spans past a full queue, counts them, and tells onExportError", async () => {
    const r = recorder(true);
    const errors: Error[] = [];
    const sink = createOtelSink({ exporter: r.exporter, onExportError: (e) => errors.push(e) });
    const ctx = ExecContext.create({ traceSink: sink });
    endSpans(ctx, 512);
    await nextTurn(); // the first batch is out, and its export hangs
    expect(r.batches).toHaveLength(1);
    endSpans(ctx, 2048 + 10);
    expect(sink.droppedSpans).toBe(10);
    r.release();
    await sink.forceFlush();
    expect(r.batches.reduce((n, b) => n + b.length, 0)).toBe(512 + 2048);
    expect(errors.map((e) => [e.name, e.message])).toEqual([
      [
        "SpansDroppedError",
        "10 spans dropped: the export queue (2048 spans) was full; exports are slower than spans are made, or failing",
      ],
    ]);
  });

  it("exports the spans of a quiet app after the scheduled delay, without keeping it alive", async () => {
    const r = recorder();
    const sink = createOtelSink({ exporter: r.exporter });
    endSpans(ExecContext.create({ traceSink: sink }), 3);
    await nextTurn();
    expect(r.batches).toHaveLength(0); // waits for more (5 s), on an unref'd timer
    await sink.shutdown();
    expect(r.batches.map((b) => b.length)).toEqual([3]);
  });
});
