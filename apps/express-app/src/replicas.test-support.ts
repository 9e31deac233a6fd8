// The harness of the replicas test: replicas of the built Express example as child processes,
// a round-robin proxy on node:http in front of them, and a client of the example's routes.
import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { existsSync } from "node:fs";
import { createServer, request, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { readSSEEvents, type SSEEvent } from "@nerva/core/testing";

const APP_DIR = join(dirname(fileURLToPath(import.meta.url)), "..");

/** One replica: its URL, the JSON lines it logged, and its process. */
export interface Replica {
  readonly url: string;
  readonly logs: Record<string, unknown>[];
  readonly child: ChildProcess;
  alive: boolean;
}

/** Starts `node dist/main.js` with `env` on port 0 and waits for its start-up line. */
export async function startReplica(env: Record<string, string>): Promise<Replica> {
  const main = join(APP_DIR, "dist", "main.js");
  if (!existsSync(main)) throw new Error(`${main} is missing: run \`pnpm turbo run build\` first.`);
  const child = spawn(process.execPath, [main], {
    cwd: APP_DIR,
    env: { PATH: process.env.PATH ?? "", OPENAI_API_KEY: "", ANTHROPIC_API_KEY: "", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const logs: Record<string, unknown>[] = [];
  let out = "";
  let err = "";
  child.stderr.on("data", (d: Buffer) => (err += d.toString()));
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout.on("data", (d: Buffer) => {
      out += d.toString();
      const match = /listening on (http:\/\/\S+)\n/.exec(out);
      if (match?.[1] !== undefined) resolve(match[1]);
      let nl: number;
      while ((nl = out.indexOf("\n")) >= 0) {
        const line = out.slice(0, nl);
        out = out.slice(nl + 1);
        if (line.startsWith("{")) logs.push(JSON.parse(line) as Record<string, unknown>);
      }
    });
    child.once("exit", (code) => reject(new Error(`replica exited with ${code}: ${out}${err}`)));
  });
  const replica: Replica = { url, logs, child, alive: true };
  child.once("exit", () => (replica.alive = false));
  return replica;
}

/** Stops a replica (SIGTERM) and waits for it to exit. */
export async function stopReplica(replica: Replica, signal: NodeJS.Signals = "SIGTERM") {
  if (replica.child.exitCode !== null || replica.child.signalCode !== null) return;
  const exited = once(replica.child, "exit");
  replica.child.kill(signal);
  await exited;
}

/** Waits until `find` returns something, polling every 10 ms, or fails after `ms`. */
export async function waitFor<T>(what: string, find: () => T | undefined, ms = 10_000) {
  const until = Date.now() + ms;
  for (;;) {
    const found = find();
    if (found !== undefined) return found;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/**
 * A round-robin proxy over the live replicas. A request with the header `x-replica: <i>` goes to
 * replica i (the header is removed). `cut()` drops every open connection, as a load balancer
 * restarting would. `served` lists which replica took each request.
 */
export async function startProxy(replicas: readonly Replica[]) {
  let next = 0;
  const open = new Set<ServerResponse>();
  const served: number[] = [];
  const server = createServer((req, res) => {
    const pinned = req.headers["x-replica"];
    const live = replicas.map((r, i) => (r.alive ? i : -1)).filter((i) => i >= 0);
    const i = typeof pinned === "string" ? Number(pinned) : (live[next++ % live.length] as number);
    served.push(i);
    const headers = { ...req.headers };
    delete headers["x-replica"];
    const target = new URL(req.url ?? "/", (replicas[i] as Replica).url);
    const upstream = request(target, { method: req.method, headers, agent: false }, (r) => {
      res.writeHead(r.statusCode ?? 502, r.headers);
      r.pipe(res);
    });
    upstream.on("error", () => (res.headersSent ? res.destroy() : res.writeHead(502).end()));
    req.pipe(upstream);
    open.add(res);
    res.on("close", () => {
      open.delete(res);
      upstream.destroy();
    });
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    served,
    cut: () => {
      for (const res of open) res.destroy();
    },
    close: async () => {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}

/** A client of the example's routes at `base` (the proxy), as one user. */
export function clientOf(base: string, token: string) {
  const call = async (method: string, path: string, body?: unknown, replica?: number) => {
    const res = await fetch(`${base}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body === undefined ? {} : { "content-type": "application/json" }),
        ...(replica === undefined ? {} : { "x-replica": String(replica) }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: res.status, headers: res.headers, body: (await res.json()) as any }; // eslint-disable-line @typescript-eslint/no-explicit-any -- test JSON, read by path
  };
  return {
    chat: (message: string, replica?: number) => call("POST", "/chat", { message }, replica),
    post: (path: string, body: unknown, replica?: number) => call("POST", path, body, replica),
    get: (path: string, replica?: number) => call("GET", path, undefined, replica),
    /** The run's events from after `lastEventId`, until the stream ends or `stop` says so. */
    events: async (
      id: string,
      options: { replica?: number; lastEventId?: string; stop?: (e: SSEEvent[]) => boolean },
    ) => {
      const res = await fetch(`${base}/runs/${id}/events`, {
        headers: {
          authorization: `Bearer ${token}`,
          ...(options.replica === undefined ? {} : { "x-replica": String(options.replica) }),
          ...(options.lastEventId === undefined ? {} : { "last-event-id": options.lastEventId }),
        },
      });
      const seen: SSEEvent[] = [];
      try {
        for await (const e of readSSEEvents(res.body as AsyncIterable<Uint8Array>)) {
          seen.push(e);
          if (options.stop?.(seen) === true) break;
        }
      } catch {
        // The connection was cut: what arrived before is kept.
      }
      return seen;
    },
  };
}

/** A token from the app's dev `/token` route. */
export async function tokenFor(base: string, user: string, roles: string[] = []) {
  const res = await fetch(`${base}/token`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ user, roles }),
  });
  return ((await res.json()) as { token: string }).token;
}
