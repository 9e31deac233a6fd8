// `nerva runs` refuses what it cannot answer honestly: a store that does not exist, an event
// query it cannot check, an answer the paused node's schema refuses, a flag it does not take.
// Runs the built bin (dist/esm/main.js) against real SQLite files: build first.
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fixture, nerva, oneLine, requireBuild } from "./nerva-bin.js";

const dir = mkdtempSync(join(tmpdir(), "nerva-runs-"));
beforeAll(requireBuild);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A SQLite file with one run of the refund desk paused at review; returns its id. */
function pausedRun(db: string, orderId = "5"): string {
  const paused = nerva(["run", fixture, "--input", JSON.stringify({ orderId }), "--store", db]);
  expect(paused.status).toBe(2);
  return /run (run_\w+)/.exec(paused.stderr)?.[1] as string;
}

function show(db: string, id: string): { status: string; lastSeq: number } {
  const out = nerva(["runs", "show", id, "--store", db]);
  expect(out.status).toBe(0);
  return JSON.parse(out.stdout) as { status: string; lastSeq: number };
}

describe("nerva runs --store", () => {
  it("refuses a file that does not exist, with exit 2, and creates nothing", () => {
    const missing = join(dir, "missing.db");
    for (const args of [
      ["list"],
      ["show", "run_x"],
      ["events", "run_x"],
      ["resume", "run_x", "--value", "1"],
      ["cancel", "run_x"],
    ]) {
      const r = nerva(["runs", ...args, "--store", missing]);
      expect(r.status, args.join(" ")).toBe(2);
      expect(oneLine(r.stderr)).toMatch(/--store .*missing\.db does not exist/);
      expect(r.stdout).toBe("");
      expect(existsSync(missing)).toBe(false);
    }
  });

  it("refuses a file that is not SQLite or holds no runs, and leaves it as it was", () => {
    const text = join(dir, "notes.txt");
    writeFileSync(text, "not a database\n");
    const r = nerva(["runs", "list", "--store", text]);
    expect(r.status).toBe(2);
    expect(oneLine(r.stderr)).toMatch(/notes\.txt is not a SQLite file of runs/);
    expect(readFileSync(text, "utf8")).toBe("not a database\n");
    const empty = join(dir, "empty.db");
    writeFileSync(empty, "");
    const e = nerva(["runs", "list", "--store", empty]);
    expect(e.status).toBe(2);
    expect(oneLine(e.stderr)).toMatch(/empty\.db holds no runs/);
    expect(statSync(empty).size).toBe(0);
  });

  it("lists every queue that has runs when --queue is not given", () => {
    const db = join(dir, "queues.db");
    const id = pausedRun(db);
    const all = nerva(["runs", "list", "--store", db]);
    expect(all.status).toBe(0);
    expect(all.stdout).toMatch(/^queue refund_desk\.default\b/m);
    expect(all.stdout).toMatch(new RegExp(`${id}\\s+paused\\s+refund_desk\\s+default`));
    expect(all.stdout).not.toMatch(/no runs/);
    // An empty queue names the queues that do hold runs.
    const other = nerva(["runs", "list", "--store", db, "--queue", "default"]);
    expect(other.status).toBe(0);
    expect(other.stdout).toMatch(/no runs in queue "default".*refund_desk\.default/);
  });
});

describe("nerva runs and policy approvals", () => {
  it("lists and shows an approval like any paused run, and will not decide it without an approver", async () => {
    const { ExecContext, RunQueue } = await import("@nerva/core");
    const { DeclarativePolicyEngine } = await import("@nerva/core/policy");
    const { SqliteRunStore } = await import("@nerva/core/sqlite");
    const db = join(dir, "approvals.db");
    const approvals = new RunQueue({ store: new SqliteRunStore({ path: db }), name: "approvals" });
    const policy = new DeclarativePolicyEngine(
      {
        version: 1,
        approvals: [
          { name: "refunds", kind: "tool", names: ["refund"], approverRoles: ["manager"] },
        ],
      },
      { approvals },
    );
    const pending = await policy.evaluate(
      { checkpoint: "during_execution", kind: "tool", name: "refund", args: { amount: 5 } },
      ExecContext.create({ userId: "alice" }),
    );
    await approvals.store.close();
    const id = pending.approvalId as string;

    const list = nerva(["runs", "list", "--store", db]);
    expect(list.status).toBe(0);
    expect(list.stdout).toMatch(/^queue approvals\b/m);
    expect(list.stdout).toMatch(new RegExp(`${id}\\s+paused\\s+refund`));
    const shown = JSON.parse(nerva(["runs", "show", id, "--store", db]).stdout) as {
      status: string;
      pause: { kind: string; prompt: string; answeredBy: unknown };
    };
    expect(shown.status).toBe("paused");
    expect(shown.pause.kind).toBe("approval");
    expect(shown.pause.prompt).toContain('Tool "refund" needs approval (rule "refunds")');
    expect(shown.pause.answeredBy).toEqual({ roles: ["manager"], exceptUsers: ["alice"] });
    // The command line has no identity, so it is not an approver.
    const answer = nerva([
      "runs",
      "resume",
      id,
      "--store",
      db,
      "--value",
      '{"decision":"approve"}',
    ]);
    expect(answer.status).not.toBe(0);
    expect(oneLine(answer.stderr)).toMatch(/PERMISSION_DENIED/);
    expect(show(db, id).status).toBe("paused");
  });
});

describe("nerva runs and the session key's record", () => {
  it("never shows, follows, answers or cancels the record that keeps the session key", async () => {
    const db = join(dir, "keys.db");
    pausedRun(db);
    const { default: Database } = await import("better-sqlite3");
    const file = new Database(db, { readonly: true, fileMustExist: true });
    const row = file.prepare("SELECT id FROM nerva_runs WHERE queue LIKE '%.keys'").get() as
      { id: string } | undefined;
    file.close();
    expect(row).toBeDefined();
    const id = (row as { id: string }).id;
    for (const args of [["show"], ["events"], ["cancel"], ["resume", "--value", '"x"']]) {
      const [sub, ...more] = args as [string, ...string[]];
      const r = nerva(["runs", sub, id, "--store", db, ...more]);
      expect(r.status, sub).toBe(2);
      expect(oneLine(r.stderr)).toMatch(/NOT_FOUND|No run/);
      expect(r.stdout).toBe("");
    }
  });
});

describe("nerva runs events", () => {
  it("checks the id and --after without --follow as with it", { timeout: 90_000 }, () => {
    const db = join(dir, "events.db");
    const id = pausedRun(db);
    for (const follow of [[], ["--follow"]]) {
      const unknown = nerva(["runs", "events", "run_nope", "--store", db, ...follow]);
      expect(unknown.status).toBe(2);
      expect(oneLine(unknown.stderr)).toMatch(/NOT_FOUND/);
      for (const after of ["abc", "1.5", "-1"]) {
        const bad = nerva(["runs", "events", id, "--store", db, "--after", after, ...follow]);
        expect(bad.status, `--after ${after} ${follow.join("")}`).toBe(2);
        expect(oneLine(bad.stderr)).toMatch(/--after/);
        expect(bad.stdout).toBe("");
      }
    }
    const tail = nerva(["runs", "events", id, "--store", db, "--after", "3"]);
    expect(tail.status).toBe(0);
    expect(tail.stdout).toMatch(/^4\t/);
    expect(tail.stdout).not.toMatch(/^[1-3]\t/m);
  });
});

describe("nerva runs resume", () => {
  it(
    "refuses a value the paused node's schema refuses, and changes nothing",
    { timeout: 90_000 },
    () => {
      const db = join(dir, "resume.db");
      const id = pausedRun(db);
      const before = show(db, id);
      // Without the module the schema is unknown: it says how to pass it.
      const blind = nerva(["runs", "resume", id, "--store", db, "--value", '"maybe"']);
      expect(blind.status).toBe(2);
      expect(oneLine(blind.stderr)).toMatch(/--module/);
      const wrong = nerva([
        "runs",
        "resume",
        id,
        "--store",
        db,
        "--value",
        '"maybe"',
        "--module",
        fixture,
      ]);
      expect(wrong.status).toBe(2);
      expect(oneLine(wrong.stderr)).toMatch(
        /INVALID_INPUT.*expected one of "approved"\|"declined"/,
      );
      expect(wrong.stdout).toBe("");
      expect(show(db, id)).toEqual(before);
      const right = nerva([
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
      expect(right.stderr).toBe("");
      expect(right.status).toBe(0);
      expect(right.stdout).toMatch(new RegExp(`${id}\\s+pending`));
    },
  );
});

describe("every nerva command checks its flags the same way", () => {
  it(
    "refuses a flag the command does not take, a malformed number and extra arguments",
    {
      timeout: 180_000,
    },
    () => {
      const db = join(dir, "flags.db");
      const id = pausedRun(db);
      const broken = join(dir, "broken.mjs");
      writeFileSync(broken, "export const graph = ;\n");
      const cases: [string[], RegExp][] = [
        [["runs", "list", "--store", db, "--port", "1"], /runs list does not take --port/],
        [["runs", "show", id, "--store", db, "--follow"], /runs show does not take --follow/],
        [["run", fixture, "--value", "1"], /run does not take --value/],
        [["dashboard", fixture, "--queue", "x"], /dashboard does not take --queue/],
        [["runs", "list", "--store", db, "--limit", "abc"], /--limit must be a whole number/],
        [["runs", "list", "--store", db, "--limit", "0"], /--limit must be a whole number/],
        [["runs", "list", "--store", db, "--status", "done"], /--status must be one of/],
        [["runs", "list", "--store", db, "--prefix", "p"], /--prefix .*Redis/],
        [["runs", "list", "--store", db, "--queue", "a b"], /--queue must be 1-64 letters/],
        [
          ["runs", "cancel", id, "--store", db, "--reason", "x".repeat(1001)],
          /--reason must be at most/,
        ],
        [
          ["runs", "resume", id, "--store", db, "--value", "1", "--key="],
          /--key must be the pause key/,
        ],
        [["runs", "show", id, "extra", "--store", db], /unexpected argument "extra"/],
        [["runs", "show", "--store", db], /runs show needs a run id/],
        [["run", fixture, "--input", "[1]"], /--input must be a JSON object/],
        [["runs", "list", "--bogus"], /unknown option '--bogus'/i],
        [["run", join(dir, "nope.ts")], /agent module .*nope\.ts does not exist/],
        [["run", broken], /agent module .*broken\.mjs failed to load: /],
        [["run", fixture, "--store", "redis://127.0.0.1:6379"], /SQLite file .*nerva runs/],
        [["dashboard", fixture, "--store", "redis://127.0.0.1:6379"], /SQLite file .*nerva runs/],
        [["run", fixture, "--store", join(dir, "no", "such", "runs.db")], /folder does not exist/],
        [["runs"], /nerva runs needs a subcommand/],
        [["runs", "list", "--store", "redis://127.0.0.1:6379"], /needs --queue with a Redis store/],
        [["runs", "list"], /--store is required/],
      ];
      for (const [args, message] of cases) {
        const r = nerva(args);
        expect(r.status, args.join(" ")).toBe(2);
        expect(oneLine(r.stderr), args.join(" ")).toMatch(message);
      }
      expect(show(db, id).status).toBe("paused");
    },
  );
});
