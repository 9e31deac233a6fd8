import { AgentStatus, ExecContext, InProcessRuntime, type AgentResult } from "@nerva/core";
import { formatSpanTree } from "@nerva/core/tracing";

/** What the demo prints, line by line, so a test can check it. */
export interface DemoReport {
  readonly lines: string[];
  readonly results: Record<string, AgentResult>;
  readonly streamed: string[];
  readonly ctx: ExecContext;
}

/** A runtime with a few agents that show each feature of the foundation. */
export function buildRuntime(): InProcessRuntime {
  return new InProcessRuntime({ timeoutSeconds: 5, circuitBreaker: { failureThreshold: 3 } })
    .register("extract_intent", async (input) => `intent=book_flight; text=${input.message}`)
    .register("lookup_data", async (input) => `${input.message}; flights=LH123,BA456`)
    .register("format_response", async (input) => `Options: ${input.message.split("flights=")[1]}`)
    .register("calendar_agent", async (input, ctx) => {
      ctx.recordTokens({ promptTokens: 40, completionTokens: 12, costUsd: 0.0004 });
      await ctx.span("calendar.lookup", async () => new Promise((r) => setTimeout(r, 5)));
      return `free on ${input.message === "next Tuesday" ? "Tuesday 10:00" : "Monday 09:00"}`;
    })
    .register("travel_agent", async (input, ctx, runtime) => {
      ctx.recordTokens({ promptTokens: 120, completionTokens: 30, costUsd: 0.0012 });
      const calendar = await runtime.delegate("calendar_agent", { message: "next Tuesday" }, ctx);
      return `Trip to ${input.args["to"] ?? "somewhere"}: you are ${calendar.output}`;
    })
    .register("streaming_agent", async function* (input, ctx) {
      for (const word of input.message.split(" ")) {
        if (ctx.signal.aborted) return;
        await new Promise((r) => setTimeout(r, 2));
        yield `${word} `;
      }
    })
    .register(
      "slow_agent",
      (_input, ctx) =>
        new Promise<string>((resolve, reject) => {
          const timer = setTimeout(resolve, 60_000, "never");
          ctx.signal.addEventListener("abort", () => {
            clearTimeout(timer);
            reject(ctx.signal.reason);
          });
        }),
      { timeoutSeconds: 0.05 },
    );
}

/** Runs every feature once in one request context and reports what happened. */
export async function runDemo(): Promise<DemoReport> {
  const runtime = buildRuntime();
  const streamed: string[] = [];
  const ctx = ExecContext.create({
    userId: "demo-user",
    sessionId: "demo-session",
    permissions: { roles: ["traveller"] },
    timeoutSeconds: 30,
    stream: { push: (chunk) => void streamed.push(chunk) },
  });
  const lines: string[] = [];
  const results: Record<string, AgentResult> = {};
  const show = (label: string, result: AgentResult) => {
    results[label] = result;
    const detail = result.status === AgentStatus.SUCCESS ? result.output : result.error;
    lines.push(`${label.padEnd(10)} ${result.status.padEnd(8)} ${detail}`);
  };

  await ctx.span("demo", async (inner) => {
    show(
      "invoke",
      await runtime.invoke(
        "travel_agent",
        { message: "Book me a flight", args: { to: "Berlin" } },
        inner,
      ),
    );
    show(
      "chain",
      await runtime.invokeChain(
        ["extract_intent", "lookup_data", "format_response"],
        { message: "Find flights to BER" },
        inner,
      ),
    );
    show("delegate", await runtime.delegate("calendar_agent", { message: "next Monday" }, inner));
    show(
      "stream",
      await runtime.invoke("streaming_agent", { message: "tokens arrive one by one" }, inner),
    );
    show("timeout", await runtime.invoke("slow_agent", { message: "take your time" }, inner));
  });

  lines.push("", `streamed chunks: ${JSON.stringify(streamed)}`);
  const u = ctx.tokenUsage;
  lines.push(
    `token usage: ${u.promptTokens} prompt + ${u.completionTokens} completion = ${u.totalTokens} tokens, $${u.costUsd.toFixed(4)}`,
  );
  lines.push("", `span tree of trace ${ctx.traceId}:`, formatSpanTree(ctx.spans));
  ctx.dispose();
  await runtime.close();
  return { lines, results, streamed, ctx };
}
