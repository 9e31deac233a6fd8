// An app on zod 3 using @nerva/ai-sdk (schemas from zod/v4, which zod 3.25 ships) and @nerva/otel.
import { InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { z as z3 } from "zod";
import { z } from "zod/v4";
import { ExecContext, InProcessRuntime } from "@nerva/core";
import { createModel } from "@nerva/ai-sdk";
import { scriptedModel } from "@nerva/ai-sdk/testing";
import { createOtelSink, startNervaOtel } from "@nerva/otel";

const exporter = new InMemorySpanExporter();
const sink = createOtelSink({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
const model = createModel(scriptedModel({ rules: [{ when: /hi/, reply: "hello from zod 3" }] }));

const runtime = new InProcessRuntime();
runtime.register(
  "greeter",
  async (input, ctx) => (await model.generate({ prompt: input.message }, ctx)).text,
);
const result = await runtime.invoke(
  "greeter",
  { message: "hi" },
  ExecContext.create({ traceSink: sink }),
);

let refused = null;
try {
  await model.generate({ prompt: "hi", output: "not a schema" }, ExecContext.create());
} catch (err) {
  refused = err.code;
}

// @opentelemetry/sdk-node is an optional peer: this app (createOtelSink only) does not install it.
let sdkNode = null;
try {
  startNervaOtel({ serviceName: "zod3-app" });
} catch (err) {
  sdkNode = { code: err.code, package: err.details?.package };
}

console.log(
  JSON.stringify({
    appZodIsV3: !("_zod" in z3.string()),
    v4Schema: z.object({ city: z.string() }).safeParse({ city: "Oslo" }).success,
    output: result.output,
    spans: exporter.getFinishedSpans().map((s) => s.name),
    refused,
    sdkNode,
  }),
);
