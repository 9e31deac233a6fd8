// startNervaOtel: NodeSDK and the Nerva sink share one exporter and one resource, so the app's
// own spans and Nerva's arrive together, in one tree.
import { setTimeout as sleep } from "node:timers/promises";
import { trace } from "@opentelemetry/api";
import { describe, expect, it } from "vitest";
import { startNervaOtel } from "../src/index.js";
import { jsonSpans, startReceiver } from "./receiver.test-support.js";
import { flightWorld } from "./world.test-support.js";

describe("startNervaOtel", () => {
  it("exports Nerva's spans and the app's through one OTLP exporter, in one tree", async () => {
    const receiver = await startReceiver();
    const otel = startNervaOtel({
      serviceName: "flights",
      url: receiver.url,
      protocol: "http/json",
    });
    try {
      const world = flightWorld({
        inTool: async () => {
          await sleep(1);
          trace.getTracer("db-client").startSpan("SELECT flights").end();
        },
      });
      const { ctx } = await world.request("flight", { traceSink: otel.sink });
      await otel.shutdown();

      const spans = jsonSpans(receiver.received);
      expect(spans).toHaveLength(ctx.spans.length + 1);
      const db = spans.find((s) => s.name === "SELECT flights")!;
      const tool = spans.find((s) => s.name === "execute_tool search_flights")!;
      expect(db.scope).toBe("db-client");
      expect(db.traceId).toBe(ctx.traceId);
      expect(db.parentSpanId).toBe(tool.spanId);
      // One resource for both kinds of span: one resourceSpans entry per request.
      for (const r of receiver.received) {
        expect(
          (JSON.parse(r.body.toString()) as { resourceSpans: unknown[] }).resourceSpans,
        ).toHaveLength(1);
      }
      expect(new Set(spans.map((s) => s.service))).toEqual(new Set(["flights"]));
    } finally {
      await receiver.close();
    }
  });
});
