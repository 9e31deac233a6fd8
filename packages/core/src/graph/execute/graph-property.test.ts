// Random graphs (fast-check): defineGraph accepts a graph or refuses it with INVALID_OPTIONS, and
// every execution of an accepted one ends at END, at a pause, or at a step/visit limit, the same
// way a plain reference interpreter of the graph ends; no execution throws.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { ExecContext } from "../../context/exec-context.js";
import { NervaError } from "../../errors.js";
import { InMemoryRunStore } from "../../runs/memory/in-memory-store.js";
import { RunQueue } from "../../runs/run-queue.js";
import { InProcessRuntime } from "../../runtime/in-process-runtime.js";
import {
  END,
  Reducers,
  GraphHost,
  defineGraph,
  fnNode,
  inputNode,
  type GraphNode,
} from "../index.js";

const State = z.object({
  n: z.number().default(0),
  trail: z.array(z.string()).default([]),
  answer: z.string().optional(),
});
type State = z.output<typeof State>;

type Kind = "fn" | "input" | "fail";
type EdgePlan =
  | { type: "static"; to: number | "end" }
  | { type: "cond"; targets: (number | "end")[] }
  | { type: "fan"; branches: [number, number]; join: number | "end" };
interface Plan {
  kinds: Kind[];
  edges: (EdgePlan | null)[];
  maxSteps: number;
  maxVisits: (number | undefined)[];
}

const target = (count: number) =>
  fc.oneof(fc.integer({ min: 0, max: count - 1 }), fc.constant("end" as const));

/** Node `i`'s usual successor: the next node, END after the last. */
const next = (i: number, count: number): number | "end" => (i + 1 < count ? i + 1 : "end");

// Mostly forward edges (so most graphs are valid), with random back edges (loops), random
// targets and END; a fan-out at i runs i+1 and i+2 and joins at i+3.
const planArb: fc.Arbitrary<Plan> = fc.integer({ min: 1, max: 7 }).chain((count) =>
  fc
    .record({
      kinds: fc.array(fc.constantFrom<Kind>("fn", "fn", "fn", "fn", "input", "fail"), {
        minLength: count,
        maxLength: count,
      }),
      edges: fc.array(
        fc.option(
          fc.oneof(
            {
              weight: 4,
              arbitrary: fc.record({
                type: fc.constant("static" as const),
                to: fc.option(target(count), { freq: 3, nil: null }),
              }),
            },
            {
              weight: 3,
              arbitrary: fc.record({
                type: fc.constant("cond" as const),
                targets: fc.array(target(count), { minLength: 0, maxLength: 2 }),
              }),
            },
            { weight: 1, arbitrary: fc.record({ type: fc.constant("fan" as const) }) },
          ),
          { freq: 12 },
        ),
        { minLength: count, maxLength: count },
      ),
      maxSteps: fc.integer({ min: 1, max: 30 }),
      maxVisits: fc.array(fc.option(fc.integer({ min: 1, max: 4 }), { nil: undefined }), {
        minLength: count,
        maxLength: count,
      }),
    })
    .map(({ kinds, edges, maxSteps, maxVisits }) => {
      const planned: (EdgePlan | null)[] = edges.map((e, i) => {
        if (e === null) return null;
        if (e.type === "static") return { type: "static", to: e.to ?? next(i, count) };
        if (e.type === "cond") return { type: "cond", targets: [next(i, count), ...e.targets] };
        return { type: "static", to: next(i, count) };
      });
      edges.forEach((e, i) => {
        if (e?.type === "fan" && i + 3 < count) {
          planned[i] = { type: "fan", branches: [i + 1, i + 2], join: i + 3 };
          planned[i + 1] = { type: "static", to: i + 3 };
          planned[i + 2] = { type: "static", to: i + 3 };
        }
      });
      return { kinds, edges: planned, maxSteps, maxVisits };
    }),
);

const id = (i: number) => `n${i}`;
const to = (t: number | "end") => (t === "end" ? END : id(t));
/** The conditional router: deterministic in the state, so the reference can follow it. */
const pick = (targets: (number | "end")[], s: State) =>
  to(targets[s.n % targets.length] as number | "end");

function build(plan: Plan) {
  const nodes: Record<string, GraphNode<State>> = {};
  plan.kinds.forEach((kind, i) => {
    const opts = plan.maxVisits[i] === undefined ? {} : { maxVisits: plan.maxVisits[i] };
    nodes[id(i)] =
      kind === "input"
        ? inputNode<State>({ prompt: `answer ${id(i)}`, writes: "answer", ...opts })
        : kind === "fail"
          ? fnNode<State>(() => {
              throw new Error(`${id(i)} fails`);
            }, opts)
          : fnNode<State>(() => ({ n: 1, trail: [id(i)] }), opts);
  });
  const edges: unknown[] = [];
  plan.edges.forEach((e, i) => {
    if (e === null) return;
    if (e.type === "static") edges.push([id(i), to(e.to)]);
    else if (e.type === "cond")
      edges.push([id(i), (s: State) => pick(e.targets, s), e.targets.map(to)]);
    else {
      edges.push([id(i), [id(e.branches[0]), id(e.branches[1])]]);
    }
  });
  return defineGraph({
    name: "random",
    state: State,
    nodes,
    edges: edges as never,
    entry: id(0),
    maxSteps: plan.maxSteps,
    reducers: { n: Reducers.sum, trail: Reducers.append },
  });
}

type End = "succeeded" | "paused" | "MAX_STEPS" | "MAX_VISITS" | "NODE_FAILED";

/** What a plain interpreter of the plan says the execution ends with. */
function reference(plan: Plan): { end: End; n: number; at?: string[] } {
  let n = 0;
  const visits = new Map<number, number>();
  let steps = 0;
  let current: number | "end" = 0;
  const admit = (i: number): End | null => {
    if (steps + 1 > plan.maxSteps) return "MAX_STEPS";
    const v = (visits.get(i) ?? 0) + 1;
    if (plan.maxVisits[i] !== undefined && v > (plan.maxVisits[i] as number)) return "MAX_VISITS";
    steps += 1;
    return null;
  };
  for (;;) {
    if (current === "end") return { end: "succeeded", n };
    const i: number = current;
    const limit = admit(i);
    if (limit !== null) return { end: limit, n };
    const kind = plan.kinds[i];
    if (kind === "input") return { end: "paused", n, at: [id(i)] };
    if (kind === "fail") return { end: "NODE_FAILED", n };
    visits.set(i, (visits.get(i) ?? 0) + 1);
    n += 1;
    const e = plan.edges[i] as EdgePlan;
    if (e.type === "static") current = e.to;
    else if (e.type === "cond") current = e.targets[n % e.targets.length] as number | "end";
    else {
      for (const b of e.branches) {
        const l = admit(b);
        if (l !== null) return { end: l, n };
      }
      const inputs = e.branches.filter((b) => plan.kinds[b] === "input").map(id);
      if (inputs.length > 0) return { end: "paused", n, at: inputs };
      if (e.branches.some((b) => plan.kinds[b] === "fail")) return { end: "NODE_FAILED", n };
      for (const b of e.branches) visits.set(b, (visits.get(b) ?? 0) + 1);
      n += e.branches.length;
      current = e.join;
    }
  }
}

const hasFan = (p: Plan) => p.edges.some((e) => e?.type === "fan");

describe("random graphs", () => {
  it(
    "are accepted or refused with INVALID_OPTIONS, and every execution ends at END, a pause or a limit",
    { timeout: 120_000 },
    async () => {
      let executed = 0;
      const ends: Record<string, number> = {};
      await fc.assert(
        fc.asyncProperty(planArb, async (plan) => {
          let graph: ReturnType<typeof build>;
          try {
            graph = build(plan);
          } catch (err) {
            expect(err).toBeInstanceOf(NervaError);
            expect((err as NervaError).code).toBe("INVALID_OPTIONS");
            return;
          }
          executed += 1;
          const runtime = new GraphHost({
            graph,
            runtime: new InProcessRuntime(),
            queue: new RunQueue({
              store: new InMemoryRunStore(),
              name: "p",
              retry: { maxAttempts: 1 },
            }),
            runner: { leaseSeconds: 5, heartbeatSeconds: 1 },
          });
          await runtime.start();
          try {
            const r = await runtime.triggerAndWait("default", {}, ExecContext.create(), {
              timeoutSeconds: 20,
            });
            expect(["succeeded", "paused", "failed"]).toContain(r.status);
            const endKey = `${r.status}:${r.error?.code ?? ""}:${hasFan(plan) ? "fan" : ""}`;
            ends[endKey] = (ends[endKey] ?? 0) + 1;
            if (r.status === "failed")
              expect(["MAX_STEPS", "MAX_VISITS", "NODE_FAILED", "INVALID_STATE_UPDATE"]).toContain(
                r.error?.code,
              );
            if (r.status === "paused")
              expect(plan.kinds[Number(r.pausedAt?.slice(1))]).toBe("input");
            expect(r.path.length).toBeLessThanOrEqual(plan.maxSteps);
            const want = reference(plan);
            const got = r.status === "failed" ? r.error?.code : r.status;
            expect(got).toBe(want.end);
            expect(r.state.n).toBe(want.n);
            if (want.at !== undefined) expect(want.at).toContain(r.pausedAt);
          } finally {
            await runtime.stop({ graceSeconds: 0 });
          }
        }),
        { numRuns: 400 },
      );
      expect(executed).toBeGreaterThan(100);
      // Each way to end was reached.
      // The common ways to end were all reached (MAX_VISITS and fan-outs come up too, not in every run).
      for (const end of ["succeeded", "paused", "failed:NODE_FAILED", "failed:MAX_STEPS"]) {
        expect(Object.keys(ends).some((k) => k.startsWith(end))).toBe(true);
      }
    },
  );
});
