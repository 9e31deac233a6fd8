export default async function context(input, ctx) {
  return {
    output: "ok",
    data: {
      request_id: ctx.requestId,
      trace_id: ctx.traceId,
      user_id: ctx.userId,
      session_id: ctx.sessionId,
      depth: ctx.depth,
    },
  };
}
