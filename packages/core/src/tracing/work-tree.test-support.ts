// Random trees of work for the property tests of usage on spans and per user: each node records
// some tokens inside its own span, then runs its children (some as delegated child requests).
import fc from "fast-check";
import type { ExecContext } from "../context/exec-context.js";

export interface Work {
  prompt: number;
  completion: number;
  cents: number;
  delegate: boolean;
  children: Work[];
}

/** Trees at most `depth` levels below the root, each node with up to 3 children. */
export const workAt = (depth: number): fc.Arbitrary<Work> =>
  fc.record({
    prompt: fc.integer({ min: 0, max: 5000 }),
    completion: fc.integer({ min: 0, max: 5000 }),
    cents: fc.integer({ min: 0, max: 100 }),
    delegate: fc.boolean(),
    children: depth === 0 ? fc.constant([]) : fc.array(workAt(depth - 1), { maxLength: 3 }),
  });

/** Runs `node` under `ctx`, yielding once per node so that concurrent requests interleave. */
export async function runWork(node: Work, ctx: ExecContext, name: string): Promise<void> {
  const target = node.delegate ? ctx.child(name) : ctx;
  await target.span(name, async (inner) => {
    await new Promise((r) => setImmediate(r));
    inner.recordTokens({
      promptTokens: node.prompt,
      completionTokens: node.completion,
      costUsd: node.cents / 100,
    });
    let i = 0;
    for (const child of node.children) await runWork(child, inner, `${name}.${i++}`);
  });
}
