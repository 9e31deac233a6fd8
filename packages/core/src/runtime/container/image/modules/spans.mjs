// Spans inside a container: nested spans with usage, sent to the host as `span` frames.
export default async function spans(input, ctx) {
  const count = Number(input.args.count ?? "0");
  await ctx.span(
    "plan",
    async (inner) => {
      inner.recordTokens({ promptTokens: 7, completionTokens: 3, costUsd: 0.002 });
      const step = inner.startSpan("plan.step", { n: 1, ok: true });
      step.end();
    },
    { model: "tiny" },
  );
  for (let i = 0; i < count; i++) ctx.startSpan(`many.${i}`).end();
  ctx.recordTokens({ promptTokens: 1, completionTokens: 1 });
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
