import type { AgentHandler } from "@nerva/core";

/** The largest N of "count to N". */
export const MAX_COUNT = 200;
/** How long each number takes. */
const STEP_MS = 100;

/** Where the example's agents write their log lines (one JSON object each). */
export type ExampleLog = (line: Record<string, string | number | null>) => void;

/**
 * `count_agent`: "count to N" answers `1 2 … N`, one number every 100 ms. In a durable run each
 * number is a committed step (`count-1`, `count-2`…): a run taken over by another worker goes on
 * from the last committed number, none counted twice or skipped, and a number is streamed only by
 * the execution that committed it. Outside a run it just counts. When its signal aborts (a
 * cancel, a deadline) it logs `count_agent.aborted` with the epoch ms and stops.
 *
 * @example
 * runtime.register("count_agent", countAgent(console.log));
 */
export function countAgent(log: ExampleLog): AgentHandler {
  return async (input, ctx) => {
    const n = Math.min(Number(/count to (\d{1,4})/i.exec(input.message)?.[1] ?? 10), MAX_COUNT);
    const runId = ctx.run?.runId ?? null;
    const onAbort = () =>
      log({ event: "count_agent.aborted", runId, at: Date.now(), pid: process.pid });
    ctx.signal.addEventListener("abort", onAbort, { once: true });
    log({ event: "count_agent.started", runId, at: Date.now(), pid: process.pid });
    try {
      const counted: number[] = [];
      for (let i = 1; i <= n; i++) {
        let fresh = false;
        const next = async (): Promise<number> => {
          await pause(STEP_MS, ctx.signal);
          // Never committed once cancelled: the number was not counted.
          ctx.signal.throwIfAborted();
          fresh = true;
          return i;
        };
        counted.push(ctx.run === null ? await next() : await ctx.run.step(`count-${i}`, next));
        if (fresh) await ctx.stream?.push(`${i} `);
      }
      return counted.join(" ");
    } finally {
      ctx.signal.removeEventListener("abort", onAbort);
    }
  };
}

/**
 * Waits `ms`, or less when `signal` aborts; leaves no timer or listener behind.
 *
 * @example
 * await pause(40, ctx.signal);
 */
export function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
  });
}
