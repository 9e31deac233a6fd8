import { ErrorCode, NervaError } from "../../errors.js";
import { RunQueue } from "../../runs/run-queue.js";
import { Runner } from "../../runs/runner.js";
import { RunStatus } from "../../runs/types.js";
import type { InProcessRuntime } from "../../runtime/in-process-runtime.js";
import type { EntryPoint, EntryPointInfo } from "./entry-points.js";
import type { ParsedGraphHostOptions } from "./host-options.js";
import type { Graph } from "../define/types.js";

/** One entry point's stream: its queue and the runner executing it. */
export interface Stream {
  readonly ep: EntryPoint;
  readonly queue: RunQueue;
  readonly runner: Runner | null;
  /** Serializes admissions, so the backlog check and the enqueue are one step in this process. */
  admitting: Promise<unknown>;
  triggered: number;
  rateLimited: number;
}

/**
 * One stream per entry point: its queue (`<queue>.<entry point>`) and a runner with the entry
 * point's concurrency; with a shared `runner`, every entry point uses the given queue and no
 * runner of its own.
 */
export function buildStreams(
  o: ParsedGraphHostOptions,
  handlers: InProcessRuntime,
  onError: (err: unknown) => void,
): Stream[] {
  const streams: Stream[] = [];
  const ids = new Set<string>();
  for (const spec of o.entryPoints) {
    if (ids.has(spec.id)) {
      throw new NervaError(
        ErrorCode.INVALID_OPTIONS,
        `Invalid options.entryPoints: two entry points are named "${spec.id}".`,
        {
          issues: [{ path: "options.entryPoints", message: `duplicate id "${spec.id}"` }],
        },
      );
    }
    ids.add(spec.id);
    const entryNode = spec.entryNode ?? o.graph.entry;
    if (!o.graph.nodes.has(entryNode)) {
      throw new NervaError(
        ErrorCode.INVALID_OPTIONS,
        `Invalid entry point "${spec.id}": entryNode "${entryNode}" is not a node of graph "${o.graph.name}" (nodes: ${o.graph.nodeIds.join(", ")}).`,
        {
          issues: [{ path: `options.entryPoints.${spec.id}.entryNode`, message: "unknown node" }],
        },
      );
    }
    const own = o.runner instanceof Runner ? null : o.runner;
    const ep: EntryPoint = {
      ...spec,
      entryNode,
      concurrency: spec.concurrency ?? own?.concurrency ?? 1,
    };
    const queue =
      own === null ? o.queue : o.queue.withName(`${o.queue.name}.${ep.id}`.slice(0, 64));
    const runner =
      own === null
        ? null
        : new Runner({
            ...own,
            queue,
            runtime: handlers,
            concurrency: ep.concurrency,
            ...(own.workerId === undefined ? {} : { workerId: `${own.workerId}:${ep.id}` }),
            onError: (e) => onError(e),
          });
    streams.push({
      ep,
      queue,
      runner,
      admitting: Promise.resolve(),
      triggered: 0,
      rateLimited: 0,
    });
  }
  return streams;
}

/** RATE_LIMITED when `backlog` runs of the entry point already wait to start. */
export async function checkBacklog(stream: Stream, graph: string): Promise<void> {
  const limit = stream.ep.backlog;
  let waiting = 0;
  let cursor: string | null = null;
  do {
    const page = await stream.queue.list({
      status: RunStatus.PENDING,
      limit: Math.min(1000, limit + 1),
      cursor,
    });
    waiting += page.runs.filter(
      (r) => r.handlers[0] === graph && r.input.args.entryPoint === stream.ep.id,
    ).length;
    cursor = page.nextCursor;
  } while (cursor !== null && waiting < limit);
  if (waiting >= limit) {
    stream.rateLimited += 1;
    throw new NervaError(
      ErrorCode.RATE_LIMITED,
      `Entry point "${stream.ep.id}" has ${waiting} runs waiting to start, its backlog limit: try again later, or raise its backlog or concurrency.`,
      { details: { entryPoint: stream.ep.id, waiting, backlog: limit, retryAfterSeconds: 1 } },
    );
  }
}

/** What `getEntryPoints` says of each stream. */
export function entryPointInfos(streams: Iterable<Stream>, graph: Graph): EntryPointInfo[] {
  return [...streams].map((s) => ({
    id: s.ep.id,
    name: s.ep.name ?? s.ep.id,
    entryNode: s.ep.entryNode ?? graph.entry,
    trigger: s.ep.trigger,
    concurrency: s.ep.concurrency,
    backlog: s.ep.backlog,
    queue: s.queue.name,
  }));
}

/** The counters of each stream, by entry point id (`getStats().entryPoints`). */
export function streamCounters(
  streams: Iterable<Stream>,
): Record<string, { triggered: number; rateLimited: number; active: number }> {
  return Object.fromEntries(
    [...streams].map((s) => [
      s.ep.id,
      {
        triggered: s.triggered,
        rateLimited: s.rateLimited,
        active: s.runner?.activeCount ?? 0,
      },
    ]),
  );
}
