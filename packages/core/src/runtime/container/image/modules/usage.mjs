export default async function usage(input, ctx) {
  ctx.recordTokens({ promptTokens: 10, completionTokens: 5, costUsd: 0.01 });
  return "ok";
}
