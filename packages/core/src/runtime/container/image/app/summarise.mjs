// /app/summarise.mjs: a module run by the Nerva agent (warm, or per-call with `module`).
export default async function* summarise(input, ctx, runtime) {
  const counted = await runtime.delegate("word_count", { message: input.message });
  for (const word of input.message.split(" ")) yield `${word} `;
  ctx.recordTokens({ promptTokens: 8, completionTokens: 4, costUsd: 0.0001 });
  return { output: `(${counted.output})`, data: { words: counted.data.words } };
}
