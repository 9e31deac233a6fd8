import { describe, expect, it } from "vitest";
import { ExecContext } from "../context/exec-context.js";
import { ErrorCode, NervaError } from "../errors.js";
import { EmbeddingRouter, type EmbedFunction } from "./embedding-router.js";

/** A real (if tiny) embedding model: bag of words over a fixed vocabulary. */
const VOCAB = [
  "flight",
  "plane",
  "airport",
  "book",
  "weather",
  "rain",
  "forecast",
  "hotel",
  "room",
];
function bagOfWords(text: string): number[] {
  const words = text.toLowerCase().match(/[a-z]+/g) ?? [];
  return VOCAB.map((v) => words.filter((w) => w === v || w === `${v}s`).length);
}

function counting(embed: (texts: string[]) => number[][] = (t) => t.map(bagOfWords)) {
  const calls: string[][] = [];
  const fn: EmbedFunction = async (texts) => {
    calls.push([...texts]);
    return embed(texts);
  };
  return { fn, calls };
}

const handlers = [
  { name: "flight_agent", description: "book a flight or a plane at the airport" },
  { name: "weather_agent", description: "weather forecast and rain" },
  { name: "hotel_agent", description: "book a hotel room" },
];
const ctx = (allowedAgents: string[] | null = null, timeoutSeconds?: number) =>
  ExecContext.create({ permissions: { allowedAgents }, timeoutSeconds });

describe("EmbeddingRouter", () => {
  it("ranks handlers by cosine similarity to their descriptions", async () => {
    const { fn } = counting();
    const router = new EmbeddingRouter({ embed: fn, handlers });
    const r = await router.classify("will it rain? need the forecast", ctx());
    expect(r.best?.name).toBe("weather_agent");
    // cos([rain, forecast], [weather, forecast, rain]) = 2 / (sqrt2 * sqrt3)
    expect(r.best?.score).toBeCloseTo(2 / (Math.SQRT2 * Math.sqrt(3)));
    expect(r.best?.reason).toMatch(/^cosine similarity 0\.816/);
    const book = await router.classify("book a room", ctx());
    expect(book.candidates.map((c) => c.name)).toEqual([
      "hotel_agent",
      "flight_agent",
      "weather_agent",
    ]);
    expect(book.candidates[2]?.score).toBe(0);
  });

  it("embeds the descriptions once, in one batch, shared by concurrent first calls", async () => {
    const { fn, calls } = counting();
    const router = new EmbeddingRouter({ embed: fn, handlers });
    await Promise.all([
      router.classify("flight", ctx()),
      router.classify("hotel", ctx()),
      router.classify("rain", ctx()),
    ]);
    await router.classify("plane", ctx());
    const batches = calls.filter((c) => c.length === 3);
    expect(batches).toEqual([handlers.map((h) => h.description)]);
    expect(calls.filter((c) => c.length === 1)).toHaveLength(4);
  });

  it("retries the description batch after it failed", async () => {
    let fail = true;
    const router = new EmbeddingRouter({
      handlers,
      embed: async (texts) => {
        if (texts.length > 1 && fail) {
          fail = false;
          throw new Error("model overloaded");
        }
        return texts.map(bagOfWords);
      },
    });
    const first = await router.classify("flight", ctx()).catch((e: unknown) => e);
    expect(first).toBeInstanceOf(NervaError);
    expect((first as NervaError).code).toBe(ErrorCode.INTERNAL);
    expect((first as NervaError).message).toContain("model overloaded");
    expect((await router.classify("flight", ctx())).best?.name).toBe("flight_agent");
  });

  it("rejects malformed vectors with a message naming the problem", async () => {
    const cases: [(texts: string[]) => unknown, RegExp][] = [
      [() => [[1, 0]], /returned 1 vectors for 3 texts/],
      [(t) => t.map(() => [1, Number.NaN]), /non-finite number in vector 0/],
      [(t) => t.map((_, i) => (i === 1 ? [1] : [1, 2])), /different lengths \(2 and 1\)/],
      [() => "nope", /returned string, not an array/],
    ];
    for (const [embed, message] of cases) {
      const router = new EmbeddingRouter({ handlers, embed: async (t) => embed(t) as number[][] });
      await expect(router.classify("x", ctx())).rejects.toThrow(message);
    }
    // The message vector must match the descriptions' dimension.
    const router = new EmbeddingRouter({
      handlers,
      embed: async (t) => (t.length === 1 ? [[1, 2, 3]] : t.map(bagOfWords)),
    });
    await expect(router.classify("x", ctx())).rejects.toThrow(/different lengths \(9 and 3\)/);
  });

  it("never returns, nor pays to embed for, handlers the context may not use", async () => {
    const { fn, calls } = counting();
    const router = new EmbeddingRouter({ embed: fn, handlers });
    const r = await router.classify("book a flight", ctx(["hotel_agent"]));
    expect(r.candidates.map((c) => c.name)).toEqual(["hotel_agent"]);
    const none = await router.classify("book a flight", ctx([]));
    expect(none).toEqual({ candidates: [], best: null });
    expect(calls.filter((c) => c.length === 1)).toHaveLength(1);
  });

  it("drops candidates below minScore and honours `only`", async () => {
    const { fn } = counting();
    const router = new EmbeddingRouter({ embed: fn, handlers, minScore: 0.1 });
    const r = await router.classify("book a room", ctx());
    expect(r.candidates.map((c) => c.name)).toEqual(["hotel_agent", "flight_agent"]);
    const only = await router.classify("book a room", ctx(), { only: ["flight_agent"] });
    expect(only.candidates.map((c) => c.name)).toEqual(["flight_agent"]);
  });

  it("scores a zero vector as 0 instead of dividing by zero", async () => {
    const { fn } = counting();
    const router = new EmbeddingRouter({ embed: fn, handlers });
    const r = await router.classify("hello there", ctx());
    expect(r.candidates.every((c) => c.score === 0)).toBe(true);
  });

  it("rejects at the request's deadline and aborts the embed call's signal", async () => {
    let seen: AbortSignal | undefined;
    const router = new EmbeddingRouter({
      handlers,
      embed: (texts, signal) => {
        if (texts.length > 1) return Promise.resolve(texts.map(bagOfWords));
        seen = signal;
        return new Promise(() => {}); // a model that never answers
      },
    });
    const started = Date.now();
    const err = await router.classify("flight", ctx(null, 0.1)).catch((e: unknown) => e);
    expect((err as NervaError).code).toBe(ErrorCode.TIMEOUT);
    expect(Date.now() - started).toBeLessThan(2000);
    expect(seen?.aborted).toBe(true);
  });

  it("rejects invalid options naming the field", () => {
    expect(() => new EmbeddingRouter({ embed: "x" as never, handlers })).toThrow(
      /options\.embed: must be a function/,
    );
    expect(() => new EmbeddingRouter({ embed: async () => [], handlers: [] })).toThrow(
      /options\.handlers: must list at least one handler/,
    );
    expect(
      () =>
        new EmbeddingRouter({
          embed: async () => [],
          handlers: [handlers[0]!, { ...handlers[0]! }],
        }),
    ).toThrow(/options\.handlers\.1\.name: duplicate name "flight_agent"/);
    expect(() => new EmbeddingRouter({ embed: async () => [], handlers, minScore: -1 })).toThrow(
      /options\.minScore/,
    );
  });
});
