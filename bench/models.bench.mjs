// What @nerva/ai-sdk adds to a model call, against the AI SDK alone on the same local server:
// - per call: `model.stream({ prompt }, ctx)` (chat span, usage and cost, call scope, retry
//   wrapper, pushes into ctx.stream) vs a bare `streamText` consuming `textStream` and then its
//   `totalUsage` (what any app needs for its accounting), both for a one-chunk answer from
//   FakeOpenAIServer (OpenAI Chat Completions SSE on 127.0.0.1) through
//   @ai-sdk/openai-compatible;
// - per streamed chunk: the same with a 400-chunk answer; the extra time over the one-chunk
//   difference, divided by the extra chunks;
// - for information, `model.generate` vs a bare `generateText` (JSON answer).
// Calls alternate bare and Nerva (which goes first alternates too); each figure is the median of
// the per-call times, which shrugs off the pauses of a shared machine better than batch means.
// Run: pnpm build && node --expose-gc bench/models.bench.mjs
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { ExecContext } from "@nerva/core";
import { PriceTable, createModel } from "@nerva/ai-sdk";
import { FakeOpenAIServer } from "@nerva/ai-sdk/testing";
import { generateText, streamText } from "ai";

const CHUNKS = 400;
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const usage = { promptTokens: 12, completionTokens: 3 };

const short = await FakeOpenAIServer.start({ respond: () => ({ chunks: ["Hi"], usage }) });
const long = await FakeOpenAIServer.start({
  respond: () => ({ chunks: Array.from({ length: CHUNKS }, (_, i) => `w${i} `), usage }),
});
const json = await FakeOpenAIServer.start({ respond: () => ({ text: "Hi", usage }) });
const providerOf = (server) =>
  createOpenAICompatible({ name: "local", baseURL: server.url, includeUsage: true }).chatModel(
    "gpt-4o-mini",
  );
const prices = new PriceTable({ "local/gpt-4o-mini": { input: 0.15, output: 0.6 } });

function pair(server) {
  const raw = providerOf(server);
  const model = createModel(providerOf(server), { prices });
  return {
    bare: async () => {
      const result = streamText({ model: raw, prompt: "Say hi", maxRetries: 0 });
      let n = 0;
      for await (const delta of result.textStream) n += delta.length;
      await result.totalUsage;
      return n;
    },
    nerva: async () => {
      let n = 0;
      const ctx = ExecContext.create({ stream: { push: (c) => void (n += c.length) } });
      await model.stream({ prompt: "Say hi" }, ctx);
      ctx.dispose();
      return n;
    },
    bareGenerate: async () =>
      (await generateText({ model: raw, prompt: "Say hi", maxRetries: 0 })).text,
    nervaGenerate: async () => {
      const ctx = ExecContext.create();
      const { text } = await model.generate({ prompt: "Say hi" }, ctx);
      ctx.dispose();
      return text;
    },
  };
}

/** Median µs per call of each of `fns` (by name) over `n` calls each, interleaved. */
async function race(fns, n) {
  const entries = Object.entries(fns);
  const times = Object.fromEntries(entries.map(([k]) => [k, []]));
  for (const [, fn] of entries) for (let i = 0; i < Math.min(n, 50); i++) await fn(); // warm up
  for (let i = 0; i < n; i++) {
    if (i % 500 === 0) globalThis.gc?.();
    const order = i % 2 === 0 ? entries : [...entries].reverse();
    for (const [name, fn] of order) {
      const t = process.hrtime.bigint();
      await fn();
      times[name].push(Number(process.hrtime.bigint() - t) / 1000);
    }
  }
  return Object.fromEntries(Object.entries(times).map(([k, v]) => [k, median(v)]));
}

const s = pair(short);
const l = pair(long);
const g = pair(json);
if ((await s.nerva()) !== 2 || (await l.nerva()) !== (await l.bare())) {
  throw new Error("sanity check failed: both sides must receive the same text");
}

const oneChunk = await race({ bare: s.bare, nerva: s.nerva }, 2000);
const manyChunks = await race({ bare: l.bare, nerva: l.nerva }, 200);
const generate = await race({ bare: g.bareGenerate, nerva: g.nervaGenerate }, 2000);
await Promise.all([short.close(), long.close(), json.close()]);

const perCallUs = oneChunk.nerva - oneChunk.bare;
const perChunkUs = (manyChunks.nerva - manyChunks.bare - perCallUs) / (CHUNKS - 1);
const round = (x, d = 1) => Math.round(x * 10 ** d) / 10 ** d;
console.log(
  JSON.stringify({
    stream_1_chunk_bare_us: round(oneChunk.bare),
    stream_1_chunk_nerva_us: round(oneChunk.nerva),
    stream_added_per_call_ms: round(perCallUs / 1000, 3),
    stream_ratio: round(oneChunk.nerva / oneChunk.bare, 3),
    [`stream_${CHUNKS}_chunks_bare_us`]: round(manyChunks.bare),
    [`stream_${CHUNKS}_chunks_nerva_us`]: round(manyChunks.nerva),
    stream_added_per_chunk_us: round(perChunkUs, 2),
    generate_bare_us: round(generate.bare),
    generate_nerva_us: round(generate.nerva),
    generate_added_per_call_ms: round((generate.nerva - generate.bare) / 1000, 3),
  }),
);
