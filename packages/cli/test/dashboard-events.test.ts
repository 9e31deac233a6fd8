// The dashboard's event stream of one run over real HTTP: each event's seq is its SSE id,
// a reconnect with Last-Event-ID gets exactly the rest, and the stream closes what it reads from
// when the page leaves, also while the server waits for a socket that never drains.
import http from "node:http";
import { once } from "node:events";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import {
  END,
  ExecContext,
  InMemoryRunStore,
  InProcessRuntime,
  RunQueue,
  GraphHost,
  defineGraph,
  fnNode,
  inputNode,
} from "@nerva/core";
import { readSSEEvents } from "@nerva/core/testing";
import { startDashboard, type Dashboard } from "../src/index.js";

const State = z.object({ chunks: z.number(), answer: z.string().optional() });
type State = z.output<typeof State>;
const big = "x".repeat(256 * 1024);
const graph = defineGraph({
  name: "talkative",
  state: State,
  nodes: {
    talk: fnNode<State>(async (s, ctx) => {
      for (let i = 0; i < s.chunks; i++) await ctx.emit(big);
      return {};
    }),
    ask: inputNode<State>({ prompt: () => "Go on?", writes: "answer" }),
  },
  edges: [
    ["talk", "ask"],
    ["ask", END],
  ],
  entry: "talk",
});

/** What the dashboard's streams did with the tails they opened. */
interface Tail {
  pulled: number;
  returned: boolean;
}
const tails: Tail[] = [];
const store = new InMemoryRunStore();
const runtime = new GraphHost({
  graph,
  runtime: new InProcessRuntime(),
  queue: new RunQueue({ store, name: "talk" }),
});
/** `runtime.events`, each tail it opens counted (the real iterator underneath). */
function watchedEvents(...args: Parameters<GraphHost["events"]>) {
  const inner = runtime.events(...args);
  const tail: Tail = { pulled: 0, returned: false };
  tails.push(tail);
  const wrapped = {
    next: async () => {
      const step = await inner.next();
      if (step.done !== true) tail.pulled++;
      return step;
    },
    return: async () => {
      const step = await inner.return(undefined);
      tail.returned = true;
      return step;
    },
    throw: (err: unknown) => inner.throw(err),
    [Symbol.asyncIterator]: () => wrapped,
  };
  return wrapped;
}
// The runtime the dashboard is given: the real one, its events() watched.
const watched = new Proxy(runtime, {
  get(target, prop) {
    if (prop === "events") return watchedEvents;
    const value: unknown = Reflect.get(target, prop, target);
    return typeof value === "function" ? (value as () => unknown).bind(target) : value;
  },
});
let dashboard: Dashboard;

beforeAll(async () => {
  await runtime.start();
  dashboard = await startDashboard(watched, store);
});
afterAll(async () => {
  await dashboard?.close();
  await runtime.stop();
});

async function paused(chunks: number): Promise<string> {
  const id = await runtime.trigger("default", { chunks }, ExecContext.create());
  await runtime.wait(id, { timeoutSeconds: 20 });
  return id;
}

const eventsUrl = (id: string) => new URL(`/api/runs/${id}/events`, dashboard.url);

async function until(check: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 5_000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe("the dashboard's event stream", () => {
  it("sends each event with its seq as the id and resumes after Last-Event-ID", async () => {
    const id = await paused(2);
    const first: { id: string | null; event: string; seq: number }[] = [];
    const controller = new AbortController();
    const res = await fetch(eventsUrl(id), { signal: controller.signal });
    for await (const e of readSSEEvents(res.body as AsyncIterable<Uint8Array>)) {
      first.push({ id: e.id, event: e.event, seq: (JSON.parse(e.data) as { seq: number }).seq });
      if (e.event === "run.paused") break;
    }
    controller.abort();
    expect(first.map((e) => e.id)).toEqual(first.map((e) => String(e.seq)));
    // The page left while the tail waited for the next event: it is closed at once.
    await until(() => tails.at(-1)?.returned === true, "the first tail is returned");

    const cut = first[2]!.seq;
    const again = new AbortController();
    const rest = await fetch(eventsUrl(id), {
      headers: { "last-event-id": String(cut) },
      signal: again.signal,
    });
    const seqs: number[] = [];
    for await (const e of readSSEEvents(rest.body as AsyncIterable<Uint8Array>)) {
      seqs.push(Number(e.id));
      if (e.event === "run.paused") break;
    }
    again.abort();
    expect(seqs).toEqual(first.slice(3).map((e) => e.seq));

    expect((await fetch(eventsUrl(id), { headers: { "last-event-id": "x" } })).status).toBe(400);
    expect((await fetch(eventsUrl("run_nope"))).status).toBe(404);
  });

  it("closes its tail when a page that stopped reading leaves while the server waits for drain", async () => {
    const id = await paused(64); // 16 MiB of output: more than the socket buffers hold
    const req = http.get(eventsUrl(id));
    const [res] = (await once(req, "response")) as [http.IncomingMessage];
    res.pause();
    const tail = () => tails.at(-1)!;
    let last = -1;
    while (tail().pulled !== last) {
      last = tail().pulled;
      await new Promise((r) => setTimeout(r, 150));
    }
    // Stalled on a full socket, well before the end of the run's events.
    expect(tail().pulled).toBeLessThan(60);
    expect(tail().returned).toBe(false);
    req.destroy();
    await until(() => tail().returned, "the tail is returned");
    expect(tail().pulled).toBe(last);
  });
});
