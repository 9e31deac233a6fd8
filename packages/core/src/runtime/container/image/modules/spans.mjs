// Spans and events inside a container: nested spans with usage and events, sent to the host as
// `span` and `event` frames.
export default async function spans(input, ctx) {
  const count = Number(input.args.count ?? "0");
  await ctx.span(
    "plan",
    async (inner) => {
      inner.recordTokens({ promptTokens: 7, completionTokens: 3, costUsd: 0.002 });
      inner.event("plan.thought", { n: 1, idea: "split" });
      const step = inner.startSpan("plan.step", { n: 1, ok: true });
      step.end();
    },
    { model: "tiny" },
  );
  for (let i = 0; i < count; i++) ctx.startSpan(`many.${i}`).end();
  ctx.recordTokens({ promptTokens: 1, completionTokens: 1 });
  const events = Number(input.args.events ?? "0");
  for (let i = 0; i < events; i++) ctx.event(`many.${i}`);
  ctx.event("spanned", { total: 2 });
  return {
    output: "spanned",
    data: {
      remaining_ms: ctx.remainingMs(),
      timeout_at: ctx.timeoutAt,
      created_at: ctx.createdAt,
      span_id: ctx.currentSpanId,
    },
  };
}
