import { describe, expect, it } from "vitest";
import { ExecContext } from "../context/exec-context.js";
import { ErrorCode, NervaError } from "../errors.js";
import { LlmRouter, type LlmClassifyFunction } from "./llm-router.js";
import type { HandlerDescription } from "./types.js";

const handlers = [
  { name: "flight_agent", description: "Books flights" },
  { name: "weather_agent", description: "Weather forecasts" },
  { name: "admin_agent", description: "Administers accounts" },
];
const ctx = (allowedAgents: string[] | null = null, timeoutSeconds?: number) =>
  ExecContext.create({ permissions: { allowedAgents }, timeoutSeconds });

/** Stands in for the model: records what it was shown and answers `answer`. */
function model(answer: unknown) {
  const shown: (readonly HandlerDescription[])[] = [];
  const classify: LlmClassifyFunction = async (_message, offered) => {
    shown.push(offered);
    return answer;
  };
  return { classify, shown };
}

describe("LlmRouter", () => {
  it("returns the model's candidates ranked", async () => {
    const { classify } = model([
      { name: "weather_agent", score: 0.3, reason: "maybe" },
      { name: "flight_agent", score: 0.9, reason: "asks for a flight" },
    ]);
    const r = await new LlmRouter({ handlers, classify }).classify("fly me to Rome", ctx());
    expect(r.candidates).toEqual([
      { name: "flight_agent", score: 0.9, reason: "asks for a flight" },
      { name: "weather_agent", score: 0.3, reason: "maybe" },
    ]);
    expect(r.best?.name).toBe("flight_agent");
  });

  it("accepts { candidates: [...] } and fills a missing reason", async () => {
    const { classify } = model({ candidates: [{ name: "flight_agent", score: 1 }] });
    const r = await new LlmRouter({ handlers, classify }).classify("x", ctx());
    expect(r.best).toEqual({ name: "flight_agent", score: 1, reason: "chosen by the model" });
  });

  it("drops unknown names and invalid entries, clamps scores, and records each correction", async () => {
    const { classify } = model([
      { name: "made_up_agent", score: 0.99 },
      { name: "flight_agent", score: 7 },
      { name: "weather_agent", score: -2 },
      { name: "admin_agent", score: "high" },
      { name: "admin_agent", score: Number.NaN },
      "flight_agent",
    ]);
    const c = ctx();
    const r = await new LlmRouter({ handlers, classify }).classify("x", c);
    expect(r.candidates.map((x) => [x.name, x.score])).toEqual([
      ["flight_agent", 1],
      ["weather_agent", 0],
    ]);
    const events = c.events.map((e) => [e.name, e.attributes["index"]]);
    expect(events).toEqual([
      ["router.llm_unknown_handler", 0],
      ["router.llm_score_clamped", 1],
      ["router.llm_score_clamped", 2],
      ["router.llm_invalid_entry", 3],
      ["router.llm_invalid_entry", 4],
      ["router.llm_invalid_entry", 5],
    ]);
    expect(c.events[0]?.attributes["name"]).toBe("made_up_agent");
  });

  it("never shows the model, nor returns, handlers the context may not use", async () => {
    const { classify, shown } = model([
      { name: "admin_agent", score: 1 },
      { name: "flight_agent", score: 0.5 },
    ]);
    const c = ctx(["flight_agent", "weather_agent"]);
    const r = await new LlmRouter({ handlers, classify }).classify("make me admin", c);
    expect(shown[0]?.map((h) => h.name)).toEqual(["flight_agent", "weather_agent"]);
    // The model named a handler it was not shown: dropped as unknown.
    expect(r.candidates.map((x) => x.name)).toEqual(["flight_agent"]);
  });

  it("does not call the model when the context may use none of the handlers", async () => {
    const { classify, shown } = model([]);
    const r = await new LlmRouter({ handlers, classify }).classify("x", ctx([]));
    expect(r).toEqual({ candidates: [], best: null });
    expect(shown).toHaveLength(0);
  });

  it("shows only the `only` handlers", async () => {
    const { classify, shown } = model([{ name: "weather_agent", score: 0.4 }]);
    await new LlmRouter({ handlers, classify }).classify("x", ctx(), { only: ["weather_agent"] });
    expect(shown[0]?.map((h) => h.name)).toEqual(["weather_agent"]);
  });

  it("rejects an answer that is not a list", async () => {
    const { classify } = model("flight_agent");
    const c = ctx();
    const err = await new LlmRouter({ handlers, classify })
      .classify("x", c)
      .catch((e: unknown) => e);
    expect((err as NervaError).code).toBe(ErrorCode.INTERNAL);
    expect((err as NervaError).message).toContain('returned "flight_agent"; expected an array');
  });

  it("wraps a failing classify function in NervaError INTERNAL", async () => {
    const router = new LlmRouter({
      handlers,
      classify: () => {
        throw new Error("429 rate limited");
      },
    });
    await expect(router.classify("x", ctx())).rejects.toThrow(
      "LlmRouter: the classify function failed: 429 rate limited",
    );
  });

  it("gives the model a context under the caller's span that can charge tokens", async () => {
    const root = ctx();
    const routerSpan = root.startSpan("router.classify");
    const c = root.fork({ span: routerSpan });
    const router = new LlmRouter({
      handlers,
      classify: async (_m, _h, inner) => {
        inner.recordTokens({ promptTokens: 100, completionTokens: 5 });
        inner.startSpan("llm.call").end();
        return [{ name: "flight_agent", score: 1 }];
      },
    });
    await router.classify("x", c);
    expect(root.tokenUsage.totalTokens).toBe(105);
    expect(root.spans.map((s) => [s.name, s.parentId])).toEqual([
      ["router.classify", null],
      ["llm.call", routerSpan.id],
    ]);
  });

  it("ends at its timeout even if the model ignores the signal", async () => {
    let signal: AbortSignal | undefined;
    const router = new LlmRouter({
      handlers,
      timeoutSeconds: 0.1,
      classify: (_m, _h, inner) => {
        signal = inner.signal;
        return new Promise(() => {});
      },
    });
    const c = ctx();
    const err = await router.classify("x", c).catch((e: unknown) => e);
    expect((err as NervaError).code).toBe(ErrorCode.TIMEOUT);
    expect(signal?.aborted).toBe(true);
    expect(c.isTimedOut()).toBe(false); // the request itself goes on
  });

  it("rejects with CANCELLED when the request is cancelled", async () => {
    const c = ctx();
    const router = new LlmRouter({ handlers, classify: () => new Promise(() => {}) });
    const pending = router.classify("x", c);
    c.cancel("user left");
    const err = await pending.catch((e: unknown) => e);
    expect((err as NervaError).code).toBe(ErrorCode.CANCELLED);
  });

  it("rejects invalid options naming the field", () => {
    expect(() => new LlmRouter({ handlers, classify: null as never })).toThrow(/options\.classify/);
    expect(() => new LlmRouter({ handlers, classify: () => [], timeoutSeconds: 0 })).toThrow(
      /options\.timeoutSeconds/,
    );
    expect(() => new LlmRouter({ handlers: [{ name: "a" }] as never, classify: () => [] })).toThrow(
      /options\.handlers\.0\.description/,
    );
  });
});
