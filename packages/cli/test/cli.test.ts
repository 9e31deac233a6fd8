// The `nerva` bin as a person uses it: in a real terminal (tmux: send-keys to type, capture-pane
// to read the screen), piped, and with no answer on stdin; `nerva runs` against the SQLite file.
// Runs the built bin (dist/esm/main.js): build first (pnpm turbo run build).
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bin, fixture, nerva, requireBuild } from "./nerva-bin.js";

const dir = mkdtempSync(join(tmpdir(), "nerva-cli-"));
const session = `nerva-cli-${process.pid}`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function tmux(...args: string[]): string {
  return execFileSync("tmux", args, { encoding: "utf8" });
}
const screen = () => tmux("capture-pane", "-p", "-t", session);

async function until(what: (s: string) => boolean, ms = 30_000): Promise<string> {
  const end = Date.now() + ms;
  for (;;) {
    const s = screen();
    if (what(s)) return s;
    if (Date.now() > end) throw new Error(`screen never matched; it shows:\n${s}`);
    await sleep(50);
  }
}

beforeAll(requireBuild);
afterAll(() => {
  spawnSync("tmux", ["kill-session", "-t", session]);
  rmSync(dir, { recursive: true, force: true });
});

describe("nerva run in a terminal", () => {
  it(
    "streams output, shows progress, prompts, refuses a wrong answer, and finishes on a right one",
    { timeout: 60_000 },
    async () => {
      const db = join(dir, "tty.db");
      const cmd = `node ${bin} run ${fixture} --input '{"orderId":"7"}' --store ${db}; echo "EXIT=$?"; sleep 60`;
      tmux("new-session", "-d", "-s", session, "-x", "160", "-y", "40", cmd);
      // The spinner line with the running node and the node counter, while lookup works.
      const spinning = await until(
        (s) => /lookup \(\d nodes? done\)/.test(s) || /nodes done\)/.test(s),
      );
      expect(spinning).toMatch(/nodes done\)/);
      let s = await until((x) => x.includes("(approved/declined)"));
      expect(s).toContain("Looking up order 7...\nfound.");
      expect(s).toContain("? Refund 42 for order 7? (approved/declined)");
      tmux("send-keys", "-t", session, "maybe", "Enter");
      s = await until((x) => x.split("(approved/declined)").length > 2);
      expect(s).toMatch(/INVALID_INPUT|Invalid answer/);
      tmux("send-keys", "-t", session, "approved", "Enter");
      s = await until((x) => x.includes("EXIT="));
      expect(s).toContain("refunded order 7");
      expect(s).toContain("EXIT=0");
      spawnSync("tmux", ["kill-session", "-t", session]);
    },
  );

  it("takes a piped answer; with none it fails with a clear message and exit code 2", () => {
    const db = join(dir, "pipe.db");
    const ok = nerva(["run", fixture, "--input", '{"orderId":"8"}', "--store", db], "declined\n");
    expect(ok.status).toBe(0);
    expect(ok.stdout).toContain("Looking up order 8...\nfound.");
    expect(ok.stdout).toContain("no refund");
    expect(ok.stderr).toContain("[nerva] node review started"); // plain progress lines off a terminal
    const none = nerva(["run", fixture, "--input", '{"orderId":"9"}', "--store", db]);
    expect(none.status).toBe(2);
    expect(none.stderr).toMatch(/waits for input at "review" and stdin has no answer/);
    const bad = nerva(["run", fixture, "--input", "{not json"]);
    expect(bad.status).toBe(2);
    expect(bad.stderr).toMatch(/--input must be JSON/);
  });
});

describe("nerva run off a terminal", () => {
  it("ends streamed text with a newline before its own progress line, on one stream", () => {
    const db = join(dir, "lines.db");
    // stdout and stderr into one pipe, as `2>&1` or a CI log shows them.
    const both = spawnSync(
      "bash",
      ["-c", `node ${bin} run ${fixture} --input '{"orderId":"3"}' --store ${db} 2>&1`],
      { input: "approved\n", encoding: "utf8", timeout: 60_000 },
    );
    expect(both.status).toBe(0);
    expect(both.stdout).toMatch(/^found\.\n\[nerva\] node review started$/m);
    expect(both.stdout).toMatch(/^\? Refund 42 for order 3\?/m);
  });

  it("says how to answer later with the real store path and the module", () => {
    const db = join(dir, "later answers.db");
    const none = nerva(["run", fixture, "--input", '{"orderId":"4"}', "--store", db]);
    expect(none.status).toBe(2);
    const id = /run (run_\w+)/.exec(none.stderr)?.[1] as string;
    const hint = none.stderr.trimEnd().split("\n").at(-1) as string;
    expect(hint).toContain(
      `nerva runs resume ${id} --store '${db}' --value JSON --module ${fixture}`,
    );
    // The hint works as printed (the value replaced).
    const resumed = spawnSync(
      "bash",
      [
        "-c",
        `node ${bin} ${hint.slice(hint.indexOf("nerva ") + 6).replace("JSON", "'\"declined\"'")}`,
      ],
      { encoding: "utf8", timeout: 60_000 },
    );
    expect(resumed.stderr).toBe("");
    expect(resumed.stdout).toMatch(new RegExp(`${id}\\s+pending`));
    // Without --store the runs live in memory: it says so instead of naming a file.
    const memory = nerva(["run", fixture, "--input", '{"orderId":"4"}']);
    expect(memory.status).toBe(2);
    expect(memory.stderr).toMatch(/run it with --store runs\.db/);
    expect(memory.stderr).not.toMatch(/<file>/);
  });
});

describe("nerva runs", () => {
  it("lists, shows, prints events, resumes and cancels runs in the SQLite file", () => {
    const db = join(dir, "runs.db");
    const paused = nerva(["run", fixture, "--input", '{"orderId":"5"}', "--store", db]);
    expect(paused.status).toBe(2);
    const id = /run (run_\w+)/.exec(paused.stderr)?.[1] as string;
    const list = nerva(["runs", "list", "--store", db, "--queue", "refund_desk.default"]);
    expect(list.stdout).toMatch(new RegExp(`${id}\\s+paused\\s+refund_desk\\s+default`));
    expect(list.stdout).toContain("waiting at $node/review#1");
    const show = nerva(["runs", "show", id, "--store", db]);
    expect(JSON.parse(show.stdout)).toMatchObject({
      id,
      status: "paused",
      pause: { key: "$node/review#1" },
    });
    const events = nerva(["runs", "events", id, "--store", db]);
    expect(events.stdout).toMatch(/^1\trun\.enqueued/m);
    // The same events every reader gets: a node visit is node.started / node.completed.
    expect(events.stdout).toMatch(
      /\tnode\.completed\t\{"node":"lookup","visit":1,"key":"lookup#1"\}/,
    );
    expect(events.stdout).toMatch(/\trun\.paused\t\{"key":"\$node\/review#1","prompt":/);
    expect(events.stdout).not.toMatch(/\tstep\./);
    const resumed = nerva([
      "runs",
      "resume",
      id,
      "--store",
      db,
      "--value",
      '"approved"',
      "--module",
      fixture,
    ]);
    expect(resumed.stdout).toMatch(new RegExp(`${id}\\s+pending`));
    const cancelled = nerva(["runs", "cancel", id, "--store", db, "--reason", "test"]);
    expect(cancelled.stdout).toMatch(new RegExp(`${id}\\s+cancelled`));
    const missing = nerva(["runs", "show", "run_nope", "--store", db]);
    expect(missing.status).toBe(2);
    expect(missing.stderr).toMatch(/NOT_FOUND/);
  });

  it("works the same against a queue on Redis (--store redis://..., --prefix)", async () => {
    const url = process.env["NERVA_REDIS_URL"] ?? "redis://127.0.0.1:6379";
    const prefix = `nerva-test:cli:${process.pid}`;
    const { ExecContext, RunQueue } = await import("@nerva/core");
    const { RedisRunStore } = await import("@nerva/core/redis");
    const store = new RedisRunStore({ url, prefix });
    try {
      const queue = new RunQueue({ store, name: "cli" });
      const run = await queue.enqueue({
        handler: "refund_agent",
        input: { message: "refund" },
        ctx: ExecContext.create({ userId: "u1" }),
      });
      const at = ["--store", url, "--prefix", prefix];
      const list = nerva(["runs", "list", ...at, "--queue", "cli"]);
      expect(list.stderr).toBe("");
      expect(list.stdout).toMatch(new RegExp(`${run.id}\\s+pending\\s+refund_agent`));
      const cancelled = nerva(["runs", "cancel", run.id, ...at, "--reason", "test"]);
      expect(cancelled.stdout).toMatch(new RegExp(`${run.id}\\s+cancelled`));
      expect((await queue.get(run.id))?.status).toBe("cancelled");
    } finally {
      await store.close();
      spawnSync("bash", [
        "-c",
        `redis-cli -u ${url} --scan --pattern '${prefix}:*' | xargs -r redis-cli -u ${url} del`,
      ]);
    }
  }, 60_000);
});
