// Bad options fail at once with INVALID_OPTIONS naming the field and the fix.
import { InMemorySpanExporter } from "@opentelemetry/sdk-trace-base";
import { describe, expect, it } from "vitest";
import { NervaError } from "@nerva/core";
import { createOtelSink, startNervaOtel } from "../src/index.js";
import { memoryExport } from "./world.test-support.js";

function invalid(make: () => unknown): NervaError {
  try {
    make();
  } catch (err) {
    expect(err).toBeInstanceOf(NervaError);
    expect((err as NervaError).code).toBe("INVALID_OPTIONS");
    return err as NervaError;
  }
  throw new Error("expected INVALID_OPTIONS");
}

describe("options", () => {
  it.each([
    [{ spans: "some" }, "options.spans"],
    [{ exporter: {} }, "options.exporter"],
    [{ spanProcessors: [{ onEnd() {} }] }, "options.spanProcessors.0"],
    [{ spanProcessors: [] }, "options.spanProcessors"],
    [{ serviceName: "" }, "options.serviceName"],
    [{ resource: { service: "x" } }, "options.resource"],
    [{ captureContent: "yes" }, "options.captureContent"],
    [{ includeUserId: 1 }, "options.includeUserId"],
    [{ onExportError: "stderr" }, "options.onExportError"],
    [{ sampleRate: 0.5 }, "options"],
  ])("createOtelSink(%j) names %s", (options, path) => {
    const err = invalid(() => createOtelSink(options as never));
    expect(err.issues.map((i) => i.path)).toContain(path);
    expect(err.message).toContain("Pass {");
  });

  it("refuses an exporter and span processors together", () => {
    const err = invalid(() =>
      createOtelSink({
        exporter: new InMemorySpanExporter(),
        spanProcessors: [memoryExport().processor],
      }),
    );
    expect(err.message).toContain("either exporter or spanProcessors");
  });

  it("refuses an OTLP protocol it does not send, named by its variable", () => {
    const saved = process.env.OTEL_EXPORTER_OTLP_PROTOCOL;
    process.env.OTEL_EXPORTER_OTLP_PROTOCOL = "grpc";
    try {
      const err = invalid(() => createOtelSink());
      expect(err.message).toContain("OTEL_EXPORTER_OTLP_PROTOCOL");
    } finally {
      if (saved === undefined) delete process.env.OTEL_EXPORTER_OTLP_PROTOCOL;
      else process.env.OTEL_EXPORTER_OTLP_PROTOCOL = saved;
    }
  });

  it.each([
    [{}, "options.serviceName"],
    [{ serviceName: "s", url: "localhost:4318" }, "options.url"],
    [{ serviceName: "s", protocol: "grpc" }, "options.protocol"],
    [{ serviceName: "s", exporter: new InMemorySpanExporter() }, "options"],
  ])("startNervaOtel(%j) names %s before starting anything", (options, path) => {
    const err = invalid(() => startNervaOtel(options as never));
    expect(err.issues.map((i) => i.path)).toContain(path);
  });
});
