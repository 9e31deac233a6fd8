// Opening the three SQLite stores on real files that cannot serve: not a database, a truncated
// database, a read-only directory, a lock held by another real process, a path with a NUL byte.
// Each is a NervaError (INVALID_OPTIONS naming the path, UNAVAILABLE for the lock), the file is
// left as it was, and no handle stays open.
import { spawn } from "node:child_process";
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  readlinkSync,
  rmSync,
  statSync,
  truncateSync,
  writeFileSync,
} from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { ExecContext } from "../context/exec-context.js";
import { NervaError } from "../errors.js";
import { SqliteMemoryStore } from "../memory/sqlite-memory-store.js";
import { SqliteRegistry } from "../registry/sqlite-registry.js";
import { SqliteRunStore } from "../runs/sqlite/sqlite-run-store.js";
import { openDatabase } from "../internal/sqlite.js";

const dir = mkdtempSync(join(tmpdir(), "nerva-sqlite-open-"));
afterAll(() => {
  chmodSync(dir, 0o700);
  for (const d of readdirSync(dir)) chmodSync(join(dir, d), 0o700);
  rmSync(dir, { recursive: true, force: true });
});
let n = 0;
const fresh = (name: string): string => join(dir, `${++n}-${name}`);

const STORES = {
  SqliteRunStore: (path: string) => new SqliteRunStore({ path, busyTimeoutSeconds: 0.05 }),
  SqliteMemoryStore: (path: string) => new SqliteMemoryStore({ path, busyTimeoutSeconds: 0.05 }),
  SqliteRegistry: (path: string) => new SqliteRegistry({ path, busyTimeoutSeconds: 0.05 }),
} as const;
type StoreName = keyof typeof STORES;

/** Paths this process holds open (its descriptors, as the kernel lists them). */
function openPaths(): string[] {
  const out: string[] = [];
  for (const fd of readdirSync("/proc/self/fd")) {
    try {
      out.push(readlinkSync(`/proc/self/fd/${fd}`));
    } catch {
      // the descriptor of the directory listing itself is gone by now
    }
  }
  return out;
}

function refusal(open: () => unknown): NervaError {
  try {
    open();
  } catch (err) {
    expect(err).toBeInstanceOf(NervaError);
    return err as NervaError;
  }
  throw new Error("the store opened");
}

/** A SQLite database written by the store itself, with more data after its tables, closed. */
async function filledFile(name: StoreName, path: string): Promise<void> {
  await STORES[name](path).close();
  const db = openDatabase(path, "path", "test");
  db.exec("CREATE TABLE filler (x TEXT)");
  const insert = db.prepare("INSERT INTO filler VALUES (?)");
  for (let i = 0; i < 300; i++) insert.run("x".repeat(1000));
  db.close();
}

/** Another process that holds an exclusive lock on `path` until killed. */
async function lockInAnotherProcess(path: string): Promise<() => Promise<void>> {
  const driver = createRequire(import.meta.url).resolve("better-sqlite3");
  const script = `
    const Database = require(${JSON.stringify(driver)});
    const db = new Database(${JSON.stringify(path)});
    db.exec("CREATE TABLE IF NOT EXISTS t (x)");
    db.exec("BEGIN EXCLUSIVE");
    db.exec("INSERT INTO t VALUES (1)");
    process.stdout.write("locked\\n");
    setInterval(() => {}, 1000);
  `;
  const child = spawn(process.execPath, ["-e", script], { stdio: ["ignore", "pipe", "inherit"] });
  await new Promise<void>((resolve, reject) => {
    child.stdout.on("data", (d: Buffer) => d.toString().includes("locked") && resolve());
    child.on("exit", (code) => reject(new Error(`locker exited ${code}`)));
  });
  return () =>
    new Promise<void>((resolve) => {
      child.once("exit", () => resolve());
      child.kill("SIGKILL");
    });
}

describe.each(Object.keys(STORES) as StoreName[])("%s on a file that cannot serve", (name) => {
  const open = STORES[name];

  it("refuses a file that is not a database with INVALID_OPTIONS naming the path, leaves it as it was and closes it", () => {
    const path = fresh("notes.db");
    const text = "These are my notes, not a database.\n".repeat(200);
    writeFileSync(path, text);
    const err = refusal(() => open(path));
    expect(err.code).toBe("INVALID_OPTIONS");
    expect(err.message).toContain(path);
    expect(err.message).toContain("is not a SQLite database");
    expect(err.issues).toEqual([{ path: "options.path", message: "is not a SQLite database" }]);
    expect(readFileSync(path, "utf8")).toBe(text);
    expect(openPaths().filter((p) => p.startsWith(path))).toEqual([]);
  });

  it("refuses a truncated database with INVALID_OPTIONS and closes it", async () => {
    const path = fresh("cut.db");
    await filledFile(name, path);
    truncateSync(path, Math.floor(statSync(path).size / 2));
    const err = refusal(() => open(path));
    expect(err.code).toBe("INVALID_OPTIONS");
    expect(err.message).toContain(path);
    expect(err.message).toMatch(/damaged SQLite database \(truncated or corrupt\)/);
    expect(openPaths().filter((p) => p.startsWith(path))).toEqual([]);
  });

  it("answers UNAVAILABLE while another process holds the file's lock, and closes it", async () => {
    const path = fresh("locked.db");
    const release = await lockInAnotherProcess(path);
    try {
      const err = refusal(() => open(path));
      expect(err.code).toBe("UNAVAILABLE");
      expect(err.details).toMatchObject({ retryAfterSeconds: 1 });
      expect(err.message).toMatch(/locked by another connection or process/);
      expect(openPaths().filter((p) => p.startsWith(path))).toEqual([]);
    } finally {
      await release();
    }
    const store = open(path);
    await store.close();
  });

  it("refuses a path with a NUL byte instead of opening the path cut at it", () => {
    const cutAt = fresh("real");
    const err = refusal(() => open(`${cutAt}\0.db`));
    expect(err.code).toBe("INVALID_OPTIONS");
    expect(err.message).toMatch(/NUL byte/);
    expect(existsSync(cutAt)).toBe(false);
  });
});

// A directory's write bit does not stop root (tests run as root on CI), so the case runs in a child
// process that drops to the unprivileged user 65534 before it opens the store.
describe("the SQLite stores in a read-only directory", () => {
  const tsx = pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href;
  const entry = fileURLToPath(new URL("./open-readonly.test-support.ts", import.meta.url));
  const asUser = process.getuid?.() === 0 ? 65534 : undefined;

  async function inChild(name: StoreName, path: string): Promise<Record<string, unknown>> {
    const child = spawn(process.execPath, ["--import", tsx, entry, name, path], {
      stdio: ["ignore", "pipe", "inherit"],
      ...(asUser === undefined ? {} : { uid: asUser, gid: asUser }),
    });
    let out = "";
    child.stdout.on("data", (d: Buffer) => (out += d.toString()));
    const code = await new Promise<number | null>((resolve) => child.on("exit", resolve));
    expect(code).toBe(0);
    return JSON.parse(out) as Record<string, unknown>;
  }

  it.each(Object.keys(STORES) as StoreName[])(
    "%s refuses a new file there, and an existing one it cannot add its journal beside, with INVALID_OPTIONS",
    async (name) => {
      const ro = fresh("ro");
      mkdirSync(ro);
      const existing = join(ro, "existing.db");
      await filledFile(name, existing);
      if (asUser !== undefined) chownSync(existing, asUser, asUser);
      chmodSync(ro, 0o555);
      chmodSync(dir, 0o755);
      for (const path of [join(ro, "new.db"), existing]) {
        const answer = await inChild(name, path);
        expect(answer).toMatchObject({ name: "NervaError", code: "INVALID_OPTIONS" });
        expect(String(answer["message"])).toContain(path);
        expect(answer["openAfter"]).toEqual([]);
      }
      expect(readdirSync(ro)).toEqual(["existing.db"]);
    },
  );
});

describe("an open store whose file another process has locked", () => {
  it("SqliteMemoryStore and SqliteRegistry answer UNAVAILABLE for a write, not a raw SqliteError", async () => {
    const memoryPath = fresh("memory-locked.db");
    const registryPath = fresh("registry-locked.db");
    const memory = new SqliteMemoryStore({ path: memoryPath, busyTimeoutSeconds: 0.05 });
    const registry = new SqliteRegistry({ path: registryPath, busyTimeoutSeconds: 0.05 });
    const releases = [
      await lockInAnotherProcess(memoryPath),
      await lockInAnotherProcess(registryPath),
    ];
    try {
      const write = memory.write({
        namespace: "n",
        session: "s",
        item: {
          id: "i1",
          kind: "fact",
          role: null,
          key: null,
          content: "x",
          metadata: {},
          createdAt: 1,
        },
        warm: true,
      } as never);
      await expect(write).rejects.toMatchObject({ code: "UNAVAILABLE" });
      const register = registry.register({ kind: "agent", name: "a" }, ExecContext.create());
      await expect(register).rejects.toMatchObject({ code: "UNAVAILABLE" });
    } finally {
      for (const release of releases) await release();
      await memory.close();
      await registry.close();
    }
  });
});
